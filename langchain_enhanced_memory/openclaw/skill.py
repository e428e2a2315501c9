"""``enhanced-memory skill install``: write the OpenClaw skill folder into a workspace.

The folder, ``WORKSPACE/skills/enhanced-memory/``, holds a ``SKILL.md`` in
OpenClaw's format and thin scripts named like the original skill's
(``enhanced_memory_search.py``, ``search_memory.py``, ``embed_memories.py``,
``memory_salience.py``, ``crossref_memories.py``), each calling this package's
command line. The template ships inside the package (``skill_template/``), so
the skill always matches the installed version.
"""

from __future__ import annotations

import os
import sys
from importlib import resources
from pathlib import Path

from ..core.errors import SkillError

SKILL_NAME = "enhanced-memory"
TEMPLATE = "skill_template"


def template_files() -> dict[str, bytes]:
    """The packaged skill template: relative path -> content."""
    root = resources.files("langchain_enhanced_memory.openclaw").joinpath(TEMPLATE)
    out: dict[str, bytes] = {}
    stack = [(root, "")]
    while stack:
        node, prefix = stack.pop()
        for child in node.iterdir():
            rel = f"{prefix}{child.name}"
            if child.name.startswith(".") or child.name == "__pycache__":
                continue
            if child.is_dir():
                stack.append((child, rel + "/"))
            else:
                out[rel] = child.read_bytes()
    return dict(sorted(out.items()))


def install(workspace: Path, *, force: bool = False) -> tuple[Path, list[str]]:
    """Write the skill into ``workspace/skills/enhanced-memory``.

    Files that already exist with other content are kept unless ``force``.

    Returns:
        The skill folder and the files written (relative to it).

    Raises:
        SkillError: A file differs and ``force`` is off, or the folder is not writable.
    """
    target = workspace / "skills" / SKILL_NAME
    files = template_files()
    clashes = [
        rel
        for rel, data in files.items()
        if (target / rel).is_file() and (target / rel).read_bytes() != data
    ]
    if clashes and not force:
        raise SkillError(
            f"{target} already holds other versions of {', '.join(clashes)} (--force overwrites)",
            "pass --force to overwrite them",
        )
    written = []
    try:
        for rel, data in files.items():
            path = target / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_bytes(data)
            if rel.endswith(".py") and rel.startswith("scripts/"):
                tmp.chmod(0o755)
            os.replace(tmp, path)
            written.append(rel)
        # The interpreter that has this package, for a python3 on PATH that does not.
        (target / "scripts" / ".python").write_text(sys.executable + "\n", encoding="utf-8")
    except OSError as exc:
        raise SkillError(f"cannot write {target}: {exc.strerror or exc}") from None
    return target, written
