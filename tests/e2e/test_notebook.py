"""The analyst notebook runs top to bottom on a synthesized `tiny` lake and draws its figures."""

from __future__ import annotations

import json

import nbformat
import pytest

from burstlake.jobs.metrics.notebook import render_notebook


@pytest.mark.slow
def test_notebook_renders_every_figure(tiny_metrics_lake, tmp_path):
    lake = tiny_metrics_lake
    out = render_notebook(lake, tmp_path / "out" / "spatial_burstiness.ipynb")
    notebook = nbformat.read(out, as_version=4)
    outputs = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    images = sum("image/png" in o.get("data", {}) for o in outputs)
    assert images == 8  # Table 3, Figs. 2, 4, 5, 7, 8, 10, 11
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert str(lake) in text
    assert "even: " in text and "of 0 all-rank jobs" not in text
    assert "applications" in text


@pytest.mark.slow  # runs a notebook kernel
def test_notebook_needs_a_metrics_lake(lake, tmp_path):
    from nbclient.exceptions import CellExecutionError

    with pytest.raises(CellExecutionError, match="burstlake metrics"):
        render_notebook(lake, tmp_path / "out.ipynb")


@pytest.mark.parametrize(
    "name", ["spatial_burstiness", "mpi_io_interference", "coordination"], ids=str
)
def test_shipped_notebooks_are_valid_nbformat(name):
    # every cell has an id (nbformat 4.5): a notebook without them is "normalized" with a
    # warning today and refused by future nbformat versions
    from importlib.resources import files

    text = files("burstlake.notebooks").joinpath(f"{name}.ipynb").read_text()
    cells = json.loads(text)["cells"]  # as stored: nbformat's reader would add missing ids
    assert [k for k, cell in enumerate(cells) if not cell.get("id")] == []
    nbformat.validate(nbformat.reads(text, as_version=4))
