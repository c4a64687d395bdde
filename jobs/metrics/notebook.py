"""Execute the analyst notebook ``notebooks/spatial_burstiness.ipynb`` on a lake (nbclient).

The notebook is package data of ``burstlake.notebooks``, read through importlib.resources, so
an installed burstlake finds it without a checkout (docs/design.md, "Packaging")."""

from __future__ import annotations

import os
import tempfile
from importlib import resources
from pathlib import Path

import nbformat
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

from burstlake.lake import lake_path

NOTEBOOK = resources.files("burstlake.notebooks").joinpath("spatial_burstiness.ipynb")


def render_notebook(
    lake: str | os.PathLike | None,
    out_path: str | os.PathLike,
    timeout_s: int = 600,
    name: str = NOTEBOOK.name,
) -> Path:
    """Run the notebook ``name`` of ``burstlake.notebooks`` against ``lake`` (its
    ``BURSTLAKE_LAKE``) and save it with outputs.

    Raises nbclient's CellExecutionError, naming the failing cell, if a cell fails.
    """
    source = resources.files("burstlake.notebooks").joinpath(name)
    if not source.is_file():
        raise FileNotFoundError(f"notebook not found: {source} (reinstall burstlake)")
    notebook = nbformat.reads(source.read_text(encoding="utf-8"), as_version=4)
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    env = os.environ | {"BURSTLAKE_LAKE": str(lake_path(lake))}
    # The kernel talks to us over Unix sockets (IPC), not loopback TCP: nothing to listen on
    # the network, and no warning about unencrypted TCP.
    with tempfile.TemporaryDirectory(prefix="burstlake-kernel-") as sockets:
        kernel = KernelManager(kernel_name="python3", transport="ipc", ip=f"{sockets}/k")
        client = NotebookClient(
            notebook,
            km=kernel,
            timeout=timeout_s,
            kernel_name="python3",
            resources={"metadata": {"path": str(out.parent)}},
        )
        try:
            client.execute(env=env)
        finally:  # a kernel manager we made is ours to stop
            if kernel.has_kernel:
                kernel.shutdown_kernel(now=True)
    nbformat.write(notebook, out)
    return out
