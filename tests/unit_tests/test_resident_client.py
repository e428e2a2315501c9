"""The one-shot client's wire format and imports (its processes: the integration tests)."""

from __future__ import annotations

import json
import subprocess
import sys

from hypothesis import given
from hypothesis import strategies as st

from langchain_enhanced_memory.servers import client

# Strings as argv and environments hold them: any text, file names' lone surrogates too.
TEXT = st.text(st.characters(blacklist_categories=["Cs"]) | st.sampled_from(["\udcff", "\ud800"]))
MESSAGES = st.dictionaries(TEXT, TEXT | st.lists(TEXT) | st.dictionaries(TEXT, TEXT), max_size=6)


@given(MESSAGES)
def test_a_run_request_is_the_json_json_dumps_writes_compactly(message: dict) -> None:
    assert client._encode(message) == json.dumps(message, separators=(",", ":"))
    assert json.loads(client._encode(message)) == message


@given(st.integers(-255, 255), TEXT, TEXT)
def test_a_run_reply_round_trips(rc: int, out: str, err: str) -> None:
    assert client.parse_run_reply(client.run_reply(rc, out, err)) == (rc, out, err)


def test_a_refusal_or_a_cut_reply_is_no_answer() -> None:
    assert client.parse_run_reply(b'{"refused": "another version of the package"}') is None
    assert client.parse_run_reply(client.run_reply(0, "out", "err")[:-1]) is None
    assert client.parse_run_reply(b"") is None
    assert client.parse_run_reply(b"R0 x 1\nab") is None


def test_the_client_imports_no_json_socket_or_pathlib() -> None:
    # A one-shot call through the resident engine pays for these only when none answers.
    code = (
        "import sys; from langchain_enhanced_memory.cli import run; "
        "from langchain_enhanced_memory.servers.client import call_resident; "
        "print(sorted(m for m in ('json', 're', 'socket', 'pathlib', 'enum', 'typing', "
        "'numpy', 'pydantic') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
