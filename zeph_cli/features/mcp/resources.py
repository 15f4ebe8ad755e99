"""MCP resources as zeph sees them: what a server lists, and how a resource's contents read as text.

Invariant: imports nothing of the SDK (the SDK's objects are read by attribute). Everything a server wrote reaches the model only inside a tool
result (framed untrusted like any tool output) or inside an attachment of the user's own message; a
blob is never decoded into text: an image goes as an image where a result can carry one, any other blob
as one line `[blob: NAME, MIME, N bytes]`. Every refusal is `ResourceError`, one line naming the server
and, where it matters, the URI.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...images import ACCEPTED_TYPES, received_image
from ...messages import ImagePart, base64_size


MAX_RESOURCE_CHARS = 400_000  # text kept of one read, before the tool output's own budget cut


class ResourceError(Exception):
    """A resource that cannot be listed or read: one line naming the server (and the URI)."""


@dataclass(frozen=True)
class ListedResource:
    uri: str
    name: str
    description: str = ""
    mime_type: str = ""
    size: int | None = None


@dataclass(frozen=True)
class ListedTemplate:
    uri_template: str
    name: str
    description: str = ""
    mime_type: str = ""


@dataclass(frozen=True)
class ResourceListing:
    """One server's resources and templates as listed (`error`: why it could not list them, else "")."""
    server: str
    resources: list[ListedResource]
    templates: list[ListedTemplate]
    error: str = ""


def listed_resource(resource: Any) -> ListedResource:
    return ListedResource(str(resource.uri), resource.name or str(resource.uri), _one_line(resource.description),
                          resource.mime_type or "", resource.size)


def listed_template(template: Any) -> ListedTemplate:
    return ListedTemplate(str(template.uri_template), template.name or "", _one_line(template.description),
                          template.mime_type or "")


def read_call(server: str, uri: str) -> str:
    """How the model reads a resource: the call, ready to copy."""
    return f'mcp_read_resource(server="{server}", uri="{uri}")'


def link_line(server: str, link: Any) -> str:
    """A `resource_link` block of a tool result: what the server says of it, and how to read it."""
    name = link.name or str(link.uri)
    description = _one_line(getattr(link, "description", None))
    mime = getattr(link, "mime_type", None)
    said = name + (f" — {description}" if description else "") + (f" ({mime})" if mime else "")
    how = f"; read it with {read_call(server, str(link.uri))}" if server else ""
    return f"[resource link: {said} {link.uri}{how}]"


def blob_line(name: str, mime: str, size: int) -> str:
    return f"[blob: {name}, {mime or 'unknown type'}, {size:,} bytes]"


def is_image(mime: str | None) -> bool:
    return bool(mime) and str(mime).lower().startswith("image/")


def contents_parts(contents: list[Any]) -> tuple[str, list[ImagePart]]:
    """A read's (or an embedded resource's) contents: the text — each part after a header line naming its URI
    when there is more than one — and the images among its blobs that can be sent (`received_image`); other
    blobs one line each."""
    texts: list[str] = []
    images: list[ImagePart] = []
    many = len(contents) > 1
    for part in contents:
        uri = str(getattr(part, "uri", ""))
        mime = getattr(part, "mime_type", None) or ""
        text = getattr(part, "text", None)
        if isinstance(text, str):
            texts.append((f"[{uri}{f' ({mime})' if mime else ''}]\n" if many else "") + text)
            continue
        blob = getattr(part, "blob", None) or ""
        image = received_image(mime, blob) if is_image(mime) else None
        if image is not None and image.mime_type in ACCEPTED_TYPES:
            images.append(image)
            texts.append(f"[image: {uri}, {mime}, {base64_size(blob):,} bytes]")
        else:
            texts.append(blob_line(uri, mime, base64_size(blob)))
    return "\n".join(texts), images


def cut(text: str, limit: int = MAX_RESOURCE_CHARS) -> str:
    """`text`, or its first `limit` characters and a line saying it was cut (MCP reads have no ranges)."""
    if len(text) <= limit:
        return text
    return (text[:limit] + f"\n[cut: the resource is {len(text):,} characters; the first {limit:,} are shown. "
            "MCP servers give a resource whole, so the rest cannot be read in parts]")


def _one_line(text: str | None) -> str:
    return " ".join((text or "").split())
