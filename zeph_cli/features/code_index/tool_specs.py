"""What the model is told about search_code: name, kind, description and argument schema.

Invariant: data only (the registry offers tools from declarations; the implementation in `tools.py`
is imported when the tool is first used).
"""

from __future__ import annotations

from ...tools.specs import ToolDeclaration

DEFAULT_RESULTS = 5
MAX_RESULTS = 20

SEARCH_CODE = ToolDeclaration(
    "search_code",
    "read",
    "Search this project's indexed code by meaning and by name: describe what the code does (\"where retries "
    "back off\") or name it (`parse_config`, `Agent.run_turn`). Returns the best-matching functions, classes "
    "or parts of files, each as `path:start-end  symbol` and its code. Cheaper than several rounds of grep; "
    "read_file shows more of a file.",
    {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to find: a description or identifiers."},
            "k": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_RESULTS,
                "description": f"How many results (default {DEFAULT_RESULTS}, at most {MAX_RESULTS}).",
            },
        },
        "required": ["query"],
    },
    ("zeph_cli.features.code_index.tools", "SearchCodeTool"),
    "code tools",
)
