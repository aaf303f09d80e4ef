"""`nlq report --format html`: a self-contained page, its charts, and how a browser shows it."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import tempfile
import zlib
from html.parser import HTMLParser

import pytest

from nlq.commands import cli
from nlq import io, report, report_html
from tests.test_report import BASELINE, SAG, _records, _score

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# The flags a sandboxed machine with no network needs (no background fetches, no GPU).
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


class _Elements(HTMLParser):
    """Counts tags, classes and every URL-bearing attribute of a page."""

    def __init__(self):
        super().__init__()
        self.tags: dict = {}
        self.classes: dict = {}
        self.urls: list = []

    def handle_starttag(self, tag, attrs):
        self.tags[tag] = self.tags.get(tag, 0) + 1
        for name, value in attrs:
            if name == "class":
                self.classes[value] = self.classes.get(value, 0) + 1
            if name in ("src", "href") or (name == "xmlns" and value != "http://www.w3.org/2000/svg"):
                self.urls.append(value)


def _parse(page: str) -> _Elements:
    parser = _Elements()
    parser.feed(page)
    return parser


def _runs(tmp_path, with_extras=True):
    records = {"baseline": _records(BASELINE, "baseline"), "sag": _records(SAG, "sag")}
    if with_extras:
        for i, r in enumerate(records["baseline"]):
            r["prediction"]["confidence"] = 0.05 + 0.1 * i
        for r in records["sag"]:
            r["repair"] = {"vote_share": 1.0 if r["score"]["exc"] else 0.34, "rounds": 1, "attempts": 3}
            r["prediction"]["usage"] = {"model_calls": 4, "prompt_tokens": 900, "completion_tokens": 100}
    paths = []
    for name, recs in records.items():
        path = tmp_path / f"{name}.scored.jsonl"
        io.write_records(recs, str(path))
        paths.append(str(path))
    return paths


def test_the_page_is_self_contained_with_one_chart_per_section(tmp_path):
    paths = _runs(tmp_path)
    page = report.run(paths, by=["db", "labels.schema_flex"], ref="sag", fmt="html", bootstrap=200,
                      cascade_fallback="sag")
    found = _parse(page)
    assert found.urls == [] and "<script" not in page and "@import" not in page and "url(" not in page
    # decomposition + 2 slices + 2 reliability diagrams + the coverage curves + the cascade
    assert found.tags["svg"] == 7 and found.classes["coverage"] == 2
    assert found.classes["segment"] == 8 + 4  # non-empty buckets: baseline 8, sag 4
    assert found.classes["slice-bar"] == 2 * 3 + 2 * 4 and found.classes["ci"] == 14
    assert found.classes["rel-bar"] >= 3 and found.classes["diagonal"] == 2
    assert found.classes["cascade-exc"] == 1 and found.classes["cascade-calls_saved"] == 1
    assert found.tags["table"] == len(report.tables(report.build(report.load_runs(paths), by=["db", "labels.schema_flex"],
                                                                  ref="sag", bootstrap=0)))
    assert "p vs sag" in page and "0.0625" in page  # the McNemar p of the terminal table
    assert "70.0%" in page and "n=4" in page


def test_segments_are_proportional_and_labelled():
    records = [{"id": str(i), "score": _score(o)} for i, o in enumerate(["correct"] * 3 + ["empty"])]
    built = report.build([report.Run("r", records)], bootstrap=0)
    svg = report_html.decomposition_chart(built)
    widths = [float(w) for w in __import__("re").findall(r'class="segment" x="[\d.]+" y="[\d.]+" width="([\d.]+)"', svg)]
    assert len(widths) == 2 and widths[0] == pytest.approx(3 * widths[1], rel=1e-3)
    assert ">75.0%<" in svg and ">25.0%<" in svg and report_html.COLOURS["correct"] in svg


def test_charts_only_when_their_fields_are_present(tmp_path):
    page = report.run(_runs(tmp_path, with_extras=False), fmt="html", bootstrap=0)
    assert "Reliability" not in page and "Cascade" not in page and _parse(page).tags["svg"] == 1


def test_run_names_are_escaped():
    built = report.build([report.Run("<b>x</b>", [{"id": "a", "score": _score("correct")}])], bootstrap=0)
    page = report.render(built, "html")
    assert "<b>x</b>" not in page and "&lt;b&gt;x&lt;/b&gt;" in page


def test_cli_writes_the_page(runner, tmp_path):
    out = tmp_path / "report.html"
    result = runner.invoke(cli, ["report", *_runs(tmp_path), "--format", "html", "--layout", "paper",
                                 "-o", str(out), "--bootstrap", "0"])
    assert result.exit_code == 0, result.stderr
    assert out.read_text().startswith("<!DOCTYPE html>") and "Accuracy and outcome decomposition" in out.read_text()


# --- in a real browser ---------------------------------------------------------------

def _png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and the unfiltered scanlines of an 8-bit, non-interlaced RGB(A) PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0
    bpp = 3 if colour == 2 else 4
    raw, stride, lines, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        lines.append(bytes(line))
        prev = line
    return width, height, [bytes(x) for x in lines], bpp


def _chromium(*args: str) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run([CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
                              capture_output=True, timeout=120)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (make browser installs it)")
def test_chromium_renders_the_charts(tmp_path):
    page = tmp_path / "report.html"
    page.write_text(report.run(_runs(tmp_path), by=["db"], fmt="html", bootstrap=100, cascade_fallback="sag"))
    dom = _chromium("--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr.decode()[-2000:]
    found = _parse(dom.stdout.decode())
    assert found.tags.get("svg") == 6 and found.classes.get("segment") == 12 and found.tags.get("rect", 0) > 30
    shot = tmp_path / "shot.png"
    result = _chromium("--window-size=900,700", "--hide-scrollbars", f"--screenshot={shot}", page.as_uri())
    assert result.returncode == 0 and shot.exists(), result.stderr.decode()[-2000:]
    width, height, lines, bpp = _png_pixels(shot.read_bytes())
    assert (width, height) == (900, 700)
    pixels = {line[i:i + 3] for line in lines[::4] for i in range(0, len(line), bpp * 4)}
    assert len(pixels) > 20, "the screenshot is blank"
    drawn = {bytes.fromhex(report_html.COLOURS[b][1:]) for b in ("correct", "empty", "value_mismatch")}
    assert drawn <= {line[i:i + 3] for line in lines for i in range(0, len(line), bpp)}, \
        "the decomposition bars are not on screen"


# -- the report fixes: captions that fit, axis titles, a visible diagonal, different totals ----------

def _two_runs_with_small_buckets() -> dict:
    """Two runs whose many small buckets are named under their bars (the caption that clipped)."""
    buckets = ["correct", "no_submission", "invalid", "exec_error", "empty", "order_only", "row_subset",
               "row_superset", "value_mismatch"]
    runs = []
    for name, n in (("kimi-k3.scored", 2620), ("kimi-k3-sql-pivot-with-a-long-name.scored", 2775)):
        counts = {b: 10 for b in buckets}
        counts["correct"] = n - 10 * (len(buckets) - 1)
        runs.append({"name": name, "n": n, "counts": counts, "fractions": {b: counts[b] / n for b in buckets},
                     "reliability": None, "coverage": None, "sources": None, "cascade": None})
    return {"runs": runs, "buckets": buckets, "slices": [], "cascade_curves": []}


def test_the_captions_under_the_bars_fit_the_chart():
    svg = report_html.decomposition_chart(_two_runs_with_small_buckets())
    width = float(re.search(r'<svg[^>]* width="(\d+)"', svg).group(1))
    captions = re.findall(r'<text x="([\d.]+)"[^>]*class="caption"[^>]*>([^<]*)</text>', svg)
    assert len(captions) > 2  # each run's caption wrapped onto more than one line
    for x, text in captions:
        assert float(x) + len(text) * report_html.CHAR <= width, text
    ys = [float(y) for y in re.findall(r'class="segment" x="[\d.]+" y="([\d.]+)"', svg)]
    caption_ys = [float(y) for y in re.findall(r'<text x="[\d.]+" y="([\d.]+)"[^>]*class="caption"', svg)]
    second_bar = max(ys)
    assert all(y < second_bar for y in caption_ys[:len(caption_ys) // 2]), "a caption overlaps the next bar"


def test_every_chart_has_axis_titles(tmp_path):
    page = report.run(_runs(tmp_path), by=["db"], fmt="html", bootstrap=0, cascade_fallback="sag")
    for title in ("share of the run&#x27;s records", "EXC (execution accuracy)", "EXC of the bin", "confidence",
                  "coverage (share of records answered)", "EXC of the answered", "threshold", "EXC / calls saved"):
        assert title in page, title


def test_the_diagonal_is_drawn_over_the_bars_in_a_visible_colour(tmp_path):
    page = report.run(_runs(tmp_path), fmt="html", bootstrap=0)
    chart = page[page.index('aria-label="reliability diagram'):]
    chart = chart[:chart.index("</svg>")]
    assert chart.rindex('class="rel-bar"') < chart.index('class="diagonal"')
    assert 'stroke="#D55E00"' in chart[chart.index("<line"):] and 'stroke-width="2"' in chart


def test_runs_on_different_totals_say_so(tmp_path):
    paths = _runs(tmp_path, with_extras=False)
    page = report.run(paths, fmt="html", bootstrap=0)
    assert "different numbers of records" not in page
    shorter = tmp_path / "short.scored.jsonl"
    shorter.write_text("".join(open(paths[0]).readlines()[:-1]))
    page = report.run([paths[1], str(shorter)], fmt="html", bootstrap=0)
    assert "The runs cover different numbers of records" in page and "sag: 10" in page and "short: 9" in page


def test_chosen_answers_by_system_and_the_coverage_curve(tmp_path):
    records = [{"id": f"d/{i}", "db": "d", "prediction": {"mql": "db.c.find()"},
                "repair": {"confidence": 0.5 + 0.05 * i, "system": "a" if i % 3 else "b"},
                "score": _score("correct" if i > 2 else "empty")}
               for i in range(9)]
    path = tmp_path / "sel.scored.jsonl"
    io.write_records(records, str(path))
    built = report.build(report.load_runs([str(path)]), bootstrap=0)
    run = built["runs"][0]
    assert run["sources"] == [{"system": "a", "n": 6, "exc": 4 / 6}, {"system": "b", "n": 3, "exc": 2 / 3}]
    assert run["coverage"][0]["coverage"] == pytest.approx(1 / 9) and run["coverage"][0]["exc"] == 1.0
    assert run["coverage"][-1] == {"threshold": 0.5, "coverage": 1.0, "exc": pytest.approx(6 / 9)}
    page = report.run([str(path)], fmt="html", bootstrap=0)
    assert "Chosen answers by system" in page and 'class="coverage"' in page


BROWSER_CHECK = """<script>
addEventListener("load", () => {
  const out = [];
  for (const svg of document.querySelectorAll("svg")) {
    const box = svg.getBoundingClientRect();
    for (const t of svg.querySelectorAll("text")) {
      const r = t.getBoundingClientRect();
      if (r.right > box.right + 0.5 || r.left < box.left - 0.5 || r.right > innerWidth)
        out.push(t.textContent);
    }
  }
  document.body.setAttribute("data-clipped", JSON.stringify(out));
});
</script>"""


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (make browser installs it)")
@pytest.mark.parametrize("width", [1000, 1280])
def test_no_chart_text_is_clipped_in_the_browser(tmp_path, width):
    paths = _runs(tmp_path)
    built = _two_runs_with_small_buckets()
    page = report.run(paths, by=["db"], fmt="html", bootstrap=0, cascade_fallback="sag")
    page = page.replace("<h2>Outcome decomposition</h2>",
                        "<h2>Outcome decomposition</h2>" + report_html.decomposition_chart(built), 1)
    target = tmp_path / "check.html"
    target.write_text(page.replace("</body>", BROWSER_CHECK + "</body>"))
    dom = _chromium(f"--window-size={width},900", "--virtual-time-budget=5000", "--dump-dom", target.as_uri())
    assert dom.returncode == 0, dom.stderr.decode()[-2000:]
    clipped = re.search(r'data-clipped="([^"]*)"', dom.stdout.decode())
    assert clipped is not None, "the check did not run"
    assert json.loads(clipped.group(1).replace("&quot;", '"')) == []
