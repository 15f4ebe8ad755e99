"""MCP resources against the reference servers: server-everything (resources, templates, resource links and
embedded resources in tool results) and server-filesystem (no resources) — through the manager and the two
tools (one manager for the module), `zeph mcp resources`, and `zeph ask` with the wire-level fake model."""

from __future__ import annotations

import base64

import json
import shutil
import sys
from pathlib import Path

import pytest
import pytest_asyncio

from zeph_cli.config.mcp import McpServerEntry
from zeph_cli.features.mcp.manager import McpManager
from zeph_cli.features.mcp.resources import MAX_RESOURCE_CHARS
from zeph_cli.features.mcp.resource_tools import ListResourcesTool, ReadResourceTool
from zeph_cli.features.mcp.tools import result_text
from zeph_cli.tools.base import ToolContext, ToolSet
from zeph_cli.tools.confinement import Confinement
from zeph_cli.tools.failures import ToolFailure
from tests.chat_wire import chat_requests, queue_call, queue_reply, tool_names, tool_results
from tests.cli_helpers import assert_one_line_error, err, out, run_zeph
from tests.mcp_reference import EVERYTHING, FILESYSTEM, needs_node_servers

pytestmark = needs_node_servers
shared_loop = pytest.mark.asyncio(loop_scope="module")  # the tests of the one manager

DOC = "demo://resource/static/document/architecture.md"
FAKE = str(Path(__file__).parent / "fakes" / "mcp_resources.py")
TIME_SERVER = shutil.which("mcp-server-time") or str(Path(sys.executable).parent / "mcp-server-time")


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("resources")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def manager(workspace):
    entries = [McpServerEntry(id="everything", command=str(EVERYTHING), trusted=True),
               McpServerEntry(id="fs", command=str(FILESYSTEM), args=(str(workspace),)),
               McpServerEntry(id="fake", command=sys.executable, args=(FAKE,))]
    manager = McpManager(entries, env={}, cwd=workspace, log_dir=workspace / "mcp")
    assert await manager.start() == []
    yield manager
    await manager.aclose()


def _context(manager, workspace: Path) -> ToolContext:
    return ToolContext(confinement=Confinement(workspace), cwd=workspace, mcp_resources=manager)


@shared_loop
async def test_only_servers_that_declare_resources_are_listed(manager):
    assert manager.offers_resources()
    assert manager.resource_servers() == ["everything", "fake"]  # server-filesystem declares none
    listing, fake = await manager.list_resources()
    assert listing.server == "everything" and not listing.error
    assert [r.uri for r in fake.resources][-4:] == ["fake://note/5", "fake://big", "fake://dot.png", "fake://data.bin"]
    assert len(fake.resources) == 8  # three pages of three
    docs = {r.uri: r for r in listing.resources}
    assert docs[DOC].name == "architecture.md" and docs[DOC].mime_type == "text/markdown"
    templates = {t.uri_template: t for t in listing.templates}
    assert templates["demo://resource/dynamic/text/{resourceId}"].mime_type == "text/plain"
    assert DOC in manager.resource_uris("everything")  # what @everything: completes to
    assert manager.resource_uris("fs") == []


@shared_loop
async def test_mcp_list_resources_shows_uris_names_templates_and_how_to_read(manager, workspace):
    result = await ListResourcesTool().run({}, _context(manager, workspace))
    assert not result.is_error
    lines = result.content.splitlines()
    assert lines[0] == "everything: 7 resources, 2 templates"
    assert "fake: 8 resources, 1 template" in lines
    assert "  fake://big  big (text/plain, 450,000 bytes)" in lines
    assert any(line.strip().startswith(DOC) and "architecture.md (text/markdown)" in line for line in lines)
    assert any("demo://resource/dynamic/blob/{resourceId}" in line for line in lines)
    assert lines[-1] == f'Read one with mcp_read_resource(server="everything", uri="{DOC}").'
    assert result.summary == "15 resources"
    only = await ListResourcesTool().run({"server": "fake"}, _context(manager, workspace))
    assert only.content.splitlines()[0] == "fake: 8 resources, 1 template" and "everything" not in only.content


@shared_loop
async def test_mcp_read_resource_gives_text_and_a_filled_in_template(manager, workspace):
    context = _context(manager, workspace)
    doc = await ReadResourceTool().run({"server": "everything", "uri": DOC}, context)
    assert doc.content.startswith("# Everything Server") and doc.summary.startswith("everything · ")
    filled = await ReadResourceTool().run({"server": "everything", "uri": "demo://resource/dynamic/text/3"}, context)
    assert filled.content.startswith("Resource 3: This is a plaintext resource")


@shared_loop
async def test_a_blob_that_is_no_image_is_one_line(manager, workspace):
    result = await ReadResourceTool().run({"server": "everything", "uri": "demo://resource/dynamic/blob/2"},
                                          _context(manager, workspace))
    assert result.content.startswith("[blob: demo://resource/dynamic/blob/2, ")
    assert result.content.endswith(" bytes]") and "\n" not in result.content


@shared_loop
async def test_a_large_resource_is_cut_saying_so_and_blobs_are_one_line_each(manager, workspace):
    context = _context(manager, workspace)
    big = await ReadResourceTool().run({"server": "fake", "uri": "fake://big"}, context)
    kept, cut_line = big.content.rsplit("\n", 1)
    assert kept == "x" * MAX_RESOURCE_CHARS
    assert cut_line.startswith(f"[cut: the resource is 450,000 characters; the first {MAX_RESOURCE_CHARS:,} are shown.")
    image = await ReadResourceTool().run({"server": "fake", "uri": "fake://dot.png"}, context)
    assert image.content == "[image: fake://dot.png, image/png, 70 bytes]" and image.summary.endswith("· 1 image")
    [picture] = image.images  # the image itself goes with the result, for a model that takes images
    assert picture.mime_type == "image/png" and base64.b64decode(picture.data).startswith(b"\x89PNG")
    data = await ReadResourceTool().run({"server": "fake", "uri": "fake://data.bin"}, context)
    assert data.content == "[blob: fake://data.bin, application/octet-stream, 1,024 bytes]"
    embedded = await manager.call_tool("fake", "embed_image", {}, 30)
    assert result_text(embedded.content, "fake") == "[image: fake://dot.png, image/png, 70 bytes]"


@shared_loop
@pytest.mark.parametrize(("arguments", "needle"), [
    ({"server": "nope", "uri": DOC}, "there is no MCP server 'nope' (servers: everything, fs, fake)"),
    ({"server": "fs", "uri": "file:///x"}, "MCP server fs offers no resources (servers with resources: everything, fake)"),
    ({"server": "fake", "uri": "fake://gone"}, "MCP server fake: cannot read fake://gone: no resource fake://gone"),
    ({"server": "everything", "uri": "demo://nope/x"}, "MCP server everything: cannot read demo://nope/x"),
    ({"server": "everything", "uri": "  "}, "argument 'uri' is empty"),
])
async def test_bad_reads_are_one_line_naming_the_culprit(manager, workspace, arguments, needle):
    with pytest.raises(ToolFailure) as failure:
        await ReadResourceTool().run(arguments, _context(manager, workspace))
    assert needle in str(failure.value) and "\n" not in str(failure.value)


@shared_loop
async def test_listing_a_server_without_resources_is_refused(manager, workspace):
    with pytest.raises(ToolFailure, match="MCP server fs offers no resources"):
        await ListResourcesTool().run({"server": "fs"}, _context(manager, workspace))


@shared_loop
async def test_resource_links_keep_name_description_and_mime_and_say_how_to_read_them(manager):
    result = await manager.call_tool("everything", "get-resource-links", {"count": 2}, 30)
    links = [line for line in result_text(result.content, "everything").splitlines() if line.startswith("[resource link")]
    assert links[1] == ("[resource link: Text Resource 2 — Resource 2: plaintext resource (text/plain) "
                        "demo://resource/dynamic/text/2; read it with "
                        'mcp_read_resource(server="everything", uri="demo://resource/dynamic/text/2")]')


@shared_loop
async def test_embedded_resources_text_under_its_uri_and_a_blob_as_one_line(manager):
    text = await manager.call_tool("everything", "get-resource-reference", {"resourceType": "Text", "resourceId": 4}, 30)
    lines = result_text(text.content, "everything").splitlines()
    at = lines.index("[resource: demo://resource/dynamic/text/4 (text/plain)]")
    assert lines[at + 1].startswith("Resource 4: This is a plaintext resource")
    blob = await manager.call_tool("everything", "get-resource-reference", {"resourceType": "Blob", "resourceId": 4}, 30)
    shown = result_text(blob.content, "everything")
    assert "[blob: demo://resource/dynamic/blob/4, " in shown and "[resource:" not in shown


# ---- zeph mcp resources ------------------------------------------------------------------------


def _config(tmp_path: Path, *names: str) -> dict[str, str]:
    known = {"fs": f'[[mcp.servers]]\nid = "fs"\ncommand = "{FILESYSTEM}"\nargs = ["{tmp_path}"]\n',
             "everything": f'[[mcp.servers]]\nid = "everything"\ncommand = "{EVERYTHING}"\n',
             "time": f'[[mcp.servers]]\nid = "time"\ncommand = "{TIME_SERVER}"\n'}
    servers = "".join(known[name] for name in names)
    path = tmp_path / "mcp.toml"
    path.write_text(servers)
    return {"ZEPH_CONFIG": str(path)}


def test_zeph_mcp_resources_lists_a_table_and_json(tmp_path):
    env = _config(tmp_path, "everything")
    table = run_zeph("mcp", "resources", env=env)
    assert table.returncode == 0, err(table)
    rows = [line.split() for line in out(table).splitlines()]
    assert rows[0] == ["SERVER", "URI", "NAME", "MIME", "SIZE"]
    assert ["everything", DOC, "architecture.md", "text/markdown", "-"] in rows
    assert any(row[:2] == ["everything", "demo://resource/dynamic/text/{resourceId}"] and "(template)" in row for row in rows)
    listed = json.loads(out(run_zeph("mcp", "resources", "everything", "--json", env=env)))
    [server] = listed
    assert server["server"] == "everything" and server["error"] is None
    assert {"uri": DOC, "name": "architecture.md", "mime_type": "text/markdown"}.items() <= \
        next(r for r in server["resources"] if r["uri"] == DOC).items()
    assert len(server["templates"]) == 2


def test_zeph_mcp_resources_of_a_server_without_them_or_of_no_server_is_one_error_line(tmp_path):
    env = _config(tmp_path, "fs")
    assert_one_line_error(run_zeph("mcp", "resources", "fs", env=env), 1, "MCP server fs offers no resources")
    assert_one_line_error(run_zeph("mcp", "resources", "nope", env=env), 1, "there is no MCP server 'nope'")


# ---- through zeph ask ---------------------------------------------------------------------------


def test_the_model_reads_a_resource_and_gets_it_framed_untrusted(fake_server, compatible, tmp_path):
    env = {**compatible, **_config(tmp_path, "everything")}
    queue_call(fake_server, "mcp_read_resource", {"server": "everything", "uri": DOC})
    queue_reply(fake_server, "It is a server of many features.")
    result = run_zeph("ask", "-y", "--mode", "plan", "What is the everything server's architecture?", env=env)
    assert result.returncode == 0, err(result)
    first, second = chat_requests(fake_server)[-2:]
    assert {"mcp_list_resources", "mcp_read_resource"} <= set(tool_names(first))  # read-only: offered in plan mode
    [text] = tool_results(second)
    assert 'untrusted="true"' in text and "# Everything Server" in text
    assert "It is a server of many features." in out(result)


def test_a_read_from_an_untrusted_server_is_asked_about_and_refused_off_a_terminal(fake_server, compatible, tmp_path):
    env = {**compatible, **_config(tmp_path, "everything")}  # not trusted: the URI the model chose goes to it
    queue_call(fake_server, "mcp_read_resource", {"server": "everything", "uri": DOC})
    queue_reply(fake_server, "I could not read it.")
    result = run_zeph("ask", "What is the everything server's architecture?", env=env)
    assert result.returncode == 0, err(result)
    [text] = tool_results(chat_requests(fake_server)[-1])
    assert "did not approve" in text and "# Everything Server" not in text, err(result)


def test_without_a_server_that_has_resources_the_tools_are_not_offered(fake_server, compatible, tmp_path):
    """server-filesystem declares no resources; mcp-server-time declares them and lists none."""
    env = {**compatible, **_config(tmp_path, "fs", "time")}
    queue_reply(fake_server, "Nothing to read.")
    result = run_zeph("ask", "Anything?", env=env)
    assert result.returncode == 0, err(result)
    names = tool_names(chat_requests(fake_server)[-1])
    assert any(n.startswith("fs__") for n in names) and any(n.startswith("time__") for n in names)
    assert "mcp_read_resource" not in names and "mcp_list_resources" not in names


@shared_loop
async def test_a_deny_rule_names_a_server_s_resources_and_reads_need_no_approval(manager, workspace):
    from zeph_cli.agent.tool_calls import CallChecks, ToolCallRunner
    from zeph_cli.features.mcp.tool_specs import MCP_READ_RESOURCE
    from zeph_cli.messages import ToolCallPart
    from zeph_cli.store import ConversationStore, ToolLog
    from zeph_cli.store.database import open_database
    from zeph_cli.tools.permissions import PermissionPolicy, deny_all
    from zeph_cli.tools.registry import DeclaredTool

    db = open_database(workspace / "deny.db")
    conversation = ConversationStore(db).create_conversation(provider="p", model="m", cwd=str(workspace))
    policy = PermissionPolicy.from_config([], ["mcp_read_resource:fake:*"])
    runner = ToolCallRunner(tools=ToolSet({"mcp_read_resource": DeclaredTool(MCP_READ_RESOURCE)}),
                            context=_context(manager, workspace), checks=CallChecks(policy, deny_all),
                            log=ToolLog(db), conversation_id=conversation.id)
    denied = await runner.run(ToolCallPart("c1", "mcp_read_resource", {"server": "fake", "uri": "fake://note/1"}))
    assert denied.result.is_error and "mcp_read_resource:fake:*" in denied.result.content, denied.result.content
    read = await runner.run(ToolCallPart("c2", "mcp_read_resource", {"server": "everything", "uri": DOC}))
    assert not read.result.is_error and "# Everything Server" in read.result.content  # no one asked: it reads
