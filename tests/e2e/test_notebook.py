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
    "name",
    ["spatial_burstiness", "mpi_io_interference", "coordination", "lake_windows"],
    ids=str,
)
def test_shipped_notebooks_are_valid_nbformat(name):
    # every cell has an id (nbformat 4.5): a notebook without them is "normalized" with a
    # warning today and refused by future nbformat versions
    from importlib.resources import files

    text = files("burstlake.notebooks").joinpath(f"{name}.ipynb").read_text()
    cells = json.loads(text)["cells"]  # as stored: nbformat's reader would add missing ids
    assert [k for k, cell in enumerate(cells) if not cell.get("id")] == []
    nbformat.validate(nbformat.reads(text, as_version=4))


@pytest.mark.slow  # runs a notebook kernel and six small replays (about 15 s)
def test_lake_windows_notebook_shows_both_models(tmp_path):
    """notebooks/lake_windows.ipynb builds paper 000's two jobs as a small lake, picks the
    busiest window by the flow model's screen, and prints "flow says x, packet says y" per
    window, job and policy: random-node slows MPI more under the packet model (buffers shared
    with the I/O burst, 000 §5.1) than under the flow model, and random-switch takes it away."""
    out = render_notebook(tmp_path / "unused", tmp_path / "out" / "lake_windows.ipynb",
                          name="lake_windows.ipynb")  # fmt: skip
    outputs = [o for c in nbformat.read(out, as_version=4).cells if c.cell_type == "code"
               for o in c.outputs]  # fmt: skip
    assert not [o for o in outputs if o.output_type == "error"]
    assert sum("image/png" in o.get("data", {}) for o in outputs) == 1
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "jobs 2, job_nodes 144" in text and "picked as busiest_ion: 6.711e+07 bytes" in text
    said = {}
    for line in text.splitlines():
        if " says " in line:
            window, job, policy, measure, *_ = line.split()
            flow, packet = line.split("flow says ")[1].split(", packet says ")
            said[job, policy, measure] = float(flow), float(packet)
            assert window == "w0"  # the lake holds one interval: one window
    flow, packet = said["mpi", "given", "mpi_slowdown"]
    assert packet > 1.05 and packet - 1 > 3 * (flow - 1)
    assert said["mpi", "random-switch", "mpi_slowdown"][1] < 1 + 0.2 * (packet - 1)
    assert said["io", "given", "io_time"][0] == pytest.approx(said["io", "given", "io_time"][1],
                                                              rel=0.05)  # fmt: skip
    assert "interference_factor" in text and "mpi_latency_p99" in text
    assert not (tmp_path / "unused").exists()  # the notebook never writes the user's lake
