"""An item as markdown a person reads and edits, and back: pure string functions.

The file of an item is::

    # <key>

    ## <field>

    <the field's text, when it is a string a person can edit as it is>

    ## <field>

    ```json
    <the field's value as JSON, for anything else>
    ```

    <!-- enhanced-memory item {"namespace": [...], "key": ..., "created_at": ..., ...} -->

The last line keeps what is not the value (namespace, key, times, TTL, the
fields indexed, the embedder): at the end it joins the last section's chunk
in the notes search instead of being a chunk (a hit) of its own. Each
top-level field of the value is a ``##`` section, in order. A string is
written as it is when it reads back the same (not empty, no surrounding
blank space, no line a parser would take for a header, a fence or the
description line); any other value, and such a string, as a fenced
JSON block: :func:`parse_item` of :func:`render_item` gives the value back
exactly. A field name that is not a plain one-line name is written as JSON
(it starts with ``"``). A section's text edited by hand is the field's new
value (a string), and a section added by hand a new field.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from .errors import ItemError
from .items import StoredItem

__all__ = ["parse_item", "render_item", "with_expiry"]

_META = "<!-- enhanced-memory item "
_END = " -->"
_FENCE = "```json"


def render_item(item: StoredItem) -> str:
    """The markdown of ``item`` (its vectors are kept elsewhere)."""
    meta = {
        "namespace": list(item.namespace),
        "key": item.key,
        "created_at": item.created_at.isoformat(),
        "updated_at": item.updated_at.isoformat(),
        "expires_at": None if item.expires_at is None else item.expires_at.isoformat(),
        "ttl": item.ttl,
        "index": item.index,
        "model": item.model,
    }
    meta = {k: v for k, v in meta.items() if v is not None}
    out = [f"# {' '.join(item.key.split()) or 'item'}"]
    for name, value in item.value.items():
        out += ["", f"## {_name(name)}", "", _body(value)]
    # Last, so it rides in the last section's chunk: no chunk of its own for a search to show.
    out += ["", _META + json.dumps(meta, ensure_ascii=True) + _END]
    return "\n".join(out) + "\n"


def parse_item(text: str) -> StoredItem:
    """The item :func:`render_item` wrote (as a person may have edited it since).

    Raises:
        ItemError: Not an item's markdown (its description line is missing or damaged).
    """
    lines = text.replace("\r\n", "\n").split("\n")
    at = [i for i, line in enumerate(lines) if line.startswith(_META) and line.endswith(_END)]
    if not at:
        raise ItemError("not an item file: it has no item description line")
    line = lines.pop(at[-1])
    try:
        meta = json.loads(line[len(_META) : -len(_END)])
        times = [meta["created_at"], meta["updated_at"], meta.get("expires_at")]
        created, updated, expires = (
            None if t is None else datetime.fromisoformat(t) for t in times
        )
        namespace, key = tuple(meta["namespace"]), meta["key"]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ItemError(f"not an item file: its description is damaged ({exc})") from None
    assert created is not None and updated is not None
    return StoredItem(
        namespace=namespace,
        key=key,
        value=_fields(lines),
        created_at=created,
        updated_at=updated,
        expires_at=expires,
        ttl=meta.get("ttl"),
        index=meta.get("index"),
        model=meta.get("model"),
    )


def with_expiry(text: str, expires: datetime | None) -> str:
    """``text`` with only its description line's ``expires_at`` changed (the rest byte for byte).

    Raises:
        ItemError: Not an item's markdown (its description line is missing or damaged).
    """
    parse_item(text)  # the same checks as a read
    lines = text.split("\n")  # as parse_item splits (a "\r" before "\n" is kept as it is)
    bare = [ln.removesuffix("\r") for ln in lines]
    at = max(i for i, ln in enumerate(bare) if ln.startswith(_META) and ln.endswith(_END))
    meta = json.loads(bare[at][len(_META) : -len(_END)])
    meta.pop("expires_at", None)
    if expires is not None:
        meta["expires_at"] = expires.isoformat()
    cr = lines[at][len(bare[at]) :]
    lines[at] = _META + json.dumps(meta, ensure_ascii=True) + _END + cr
    return "\n".join(lines)


def _fields(lines: list[str]) -> dict[str, Any]:
    value: dict[str, Any] = {}
    name: str | None = None
    body: list[str] = []
    for line in [*lines, "## "]:  # a last header ends the last section
        if not line.startswith("## "):
            body.append(line)
            continue
        if name is not None:
            value[name] = _read_body("\n".join(body).strip("\n"))
        header = line[3:]
        name = _read_name(header) if header else None
        body = []
    return value


def _name(name: str) -> str:
    plain = name and name == name.strip() and "\n" not in name and "\r" not in name
    return name if plain and not name.startswith('"') else json.dumps(name)


def _read_name(header: str) -> str:
    if header.startswith('"'):
        try:
            name = json.loads(header)
            if isinstance(name, str):
                return name
        except ValueError:
            pass
    return header.strip()


def _body(value: Any) -> str:
    if isinstance(value, str) and _plain(value):
        return value
    return f"{_FENCE}\n{json.dumps(value, ensure_ascii=True)}\n```"


def _plain(text: str) -> bool:
    """Whether ``text`` reads back as itself when written bare in a section."""
    if not text or text != text.strip() or "\r" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: only JSON's escapes keep it
        return False
    return not any(line.startswith(("#", "```", "~~~", _META.strip())) for line in text.split("\n"))


def _read_body(body: str) -> Any:
    stripped = body.strip()
    if stripped.startswith(_FENCE + "\n") and stripped.endswith("\n```"):
        try:
            return json.loads(stripped[len(_FENCE) + 1 : -4])
        except ValueError:
            pass  # edited into something else: the text as it is
    return stripped
