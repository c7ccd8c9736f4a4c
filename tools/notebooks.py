"""Execute the book's chapter notebooks in fresh kernels and store their outputs.

Command line (what ``make execute`` runs)::

    python tools/notebooks.py chapters/01_softmax_jacobian.ipynb ...

This is build tooling, not mathematics, so it lives outside the ``attnscale``
package (which needs only numpy, scipy, sympy and mpmath, plus matplotlib for
figures); it needs nbclient and nbformat, which the book's pins provide.

Each notebook runs top to bottom in a new ``python3`` kernel with its own
folder as the working directory; the outputs are written back into the file,
with no timing metadata, so that a re-run with the same library gives the
same file and ``nbval`` can compare stored outputs with fresh ones.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from pathlib import Path

__all__ = ["execute_notebook", "main"]


def execute_notebook(path: str | Path, *, prelude: str | None = None, timeout: int = 600, write: bool = True):
    """Run the notebook at ``path`` in a fresh kernel and return it.

    ``prelude`` is code run in the kernel before the first cell (tests use it
    to swap in a deliberately wrong library function); it is never stored.
    With ``write`` the executed notebook replaces the file. Raises
    ``nbclient.exceptions.CellExecutionError`` if a cell fails.
    """
    import nbformat
    from nbclient import NotebookClient

    path = Path(path)
    if path.suffix != ".ipynb" or not path.is_file():
        raise ValueError(f"path must be an existing .ipynb file, got {str(path)!r}")
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
            cell.metadata.pop("execution", None)
    if prelude is not None:
        nb.cells.insert(0, nbformat.v4.new_code_cell(prelude))
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent.resolve())}},
        record_timing=False,
    )
    client.execute()
    if prelude is not None:
        nb.cells.pop(0)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = _coalesce_streams(cell.outputs)
    if write:
        nb.metadata.pop("widgets", None)
        nbformat.write(nb, path)
    return nb


def _coalesce_streams(outputs: list) -> list:
    """Join consecutive stream outputs of the same name: how the kernel happened
    to chunk its prints must not change the stored file."""
    import nbformat

    merged: list = []
    for out in outputs:
        if (
            out.get("output_type") == "stream"
            and merged
            and merged[-1].get("output_type") == "stream"
            and merged[-1].get("name") == out.get("name")
        ):
            text = "".join(merged[-1]["text"]) + "".join(out["text"])
            merged[-1] = nbformat.v4.new_output("stream", name=out["name"], text=text)
        else:
            merged.append(out)
    return merged


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--timeout", type=int, default=600)
    args = parser.parse_args(argv)
    for path in args.notebooks:
        start = time.perf_counter()
        execute_notebook(path, timeout=args.timeout)
        seconds = time.perf_counter() - start
        record_run_time(path, seconds)
        print(f"executed {path} in {seconds:.1f} s")
    return 0


def record_run_time(path: str | Path, seconds: float) -> Path:
    """Note a chapter's run time and today's date in ``data/execution.json``
    beside it (what the book's execution-status page shows)."""
    path = Path(path)
    record = path.parent / "data" / "execution.json"
    runs = json.loads(record.read_text()) if record.is_file() else {}
    runs[path.stem] = {"seconds": round(float(seconds), 1), "executed": datetime.date.today().isoformat()}
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps(dict(sorted(runs.items())), indent=1) + "\n")
    return record


if __name__ == "__main__":
    sys.exit(main())
