"""`DIR/report.html`: the summary per model, then every item's reference and renders.

A static page with relative links to the screenshots beside it, so the whole directory
can be zipped or served as it is. Every string from a set, a model or a generation is
escaped.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from services.eval.results import BLOCK_METRICS, ItemResult, ModelSummary, Results, write_atomic
from services.eval.results import EVAL_METRICS as METRICS

LABELS = {
    "block_match": "block-match",
    "text": "text",
    "position": "position",
    "color": "color",
    "visual": "visual",
    "accessibility": "a11y",
}
PNG_NOTE = "PNG reference (no HTML): only the visual score applies"
OCR_NOTE = (
    "PNG reference (no HTML): its text blocks were read by OCR; hover the reference to see them"
)

_CSS = """
body { font-family: system-ui, sans-serif; margin: 24px; color: #111; background: #fafafa; }
h1 { margin: 0 0 4px; } .meta { color: #555; margin: 0 0 20px; }
table { border-collapse: collapse; background: #fff; }
th, td { border: 1px solid #ddd; padding: 6px 10px; text-align: right; font-size: 14px; }
th:first-child, td:first-child { text-align: left; }
section.item { margin: 28px 0; padding: 16px; background: #fff; border: 1px solid #e5e5e5; }
section.item h2 { margin: 0 0 4px; font-size: 18px; } .note { color: #92400e; }
.row { display: flex; gap: 16px; overflow-x: auto; align-items: flex-start; }
figure { margin: 0; flex: 0 0 320px; } figure img { width: 320px; border: 1px solid #ccc; }
.ocr { position: relative; display: block; width: 320px; }
.ocr span { position: absolute; outline: 1px solid rgba(37, 99, 235, 0.35); }
.ocr span:hover { outline: 2px solid #2563eb; background: rgba(37, 99, 235, 0.12); }
figcaption { font-size: 13px; margin-top: 6px; } figcaption table td { font-size: 12px; }
.failed { color: #b91c1c; } .pending { color: #777; }
"""


def fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _cost(value: float) -> str:
    return f"${value:.4f}" if value else "–"


def _tokens(inp: int, out: int) -> str:
    return f"{inp:,} in / {out:,} out" if inp or out else "–"


def summary_rows(summary: list[ModelSummary], total: int) -> list[list[str]]:
    """The summary table's rows (also what the CLI prints): one per model."""
    return [
        [
            s.model,
            f"{s.done}/{total}" + (f" ({s.failed} failed)" if s.failed else ""),
            *(fmt(s.means.get(m)) for m in METRICS),
            _tokens(s.input_tokens, s.output_tokens),
            _cost(s.cost_usd),
            f"{s.seconds:.1f} s",
        ]
        for s in summary
    ]


SUMMARY_HEADER = ["model", "items", *(LABELS[m] for m in METRICS), "tokens", "cost", "time"]


def _summary(results: Results) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in SUMMARY_HEADER)
    rows = "".join(
        "<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>"
        for row in summary_rows(results.summary(), len(results.items))
    )
    return f'<table id="summary"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'


def _figure(src: str, alt: str, caption: str) -> str:
    image = (
        f'<img src="{escape(src)}" alt="{escape(alt)}" loading="lazy">'
        if src
        else '<div class="pending">no render</div>'
    )
    return f"<figure>{image}<figcaption>{caption}</figcaption></figure>"


def _ocr_figure(src: str, alt: str, item: dict[str, object]) -> str:
    """The reference with its OCR blocks over it, each naming its text on hover."""
    size = item.get("size")
    blocks = item.get("ocr_blocks")
    if not isinstance(size, dict) or not isinstance(blocks, list):
        return _figure(src, alt, "<b>reference</b>")
    width = float(size.get("width") or 1)
    height = float(size.get("height") or 1)
    boxes = "".join(
        f'<span class="ocr-block" title="{escape(str(b["text"]))}" style="left:'
        f"{100 * b['x'] / width:.2f}%;top:{100 * b['y'] / height:.2f}%;width:"
        f'{100 * b["w"] / width:.2f}%;height:{100 * b["h"] / height:.2f}%"></span>'
        for b in blocks
        if isinstance(b, dict)
    )
    image = f'<img src="{escape(src)}" alt="{escape(alt)}" loading="lazy">'
    return (
        f'<figure><span class="ocr">{image}{boxes}</span>'
        f"<figcaption><b>reference</b> · {len(blocks)} OCR blocks</figcaption></figure>"
    )


def _scores_table(result: ItemResult, html: bool) -> str:
    scores = result.scores or {}
    rows = "".join(
        f"<tr><td>{LABELS[m]}</td><td>{fmt(scores.get(m))}</td></tr>"
        for m in METRICS
        if html or m not in BLOCK_METRICS
    )
    return f'<table class="scores">{rows}</table>'


def _result_caption(model: str, result: ItemResult | None, html: bool) -> str:
    name = f"<b>{escape(model)}</b>"
    if result is None:
        return f'{name} <span class="pending">pending</span>'
    parts = [name]
    if result.status != "ok":
        parts.append(f'<div class="failed">failed: {escape(result.error)}</div>')
    else:
        parts.append(_scores_table(result, html))
    tokens = _tokens(result.input_tokens, result.output_tokens)
    parts.append(
        f"<div>{escape(tokens)} · {escape(_cost(result.cost_usd))} · {result.seconds:.1f} s</div>"
    )
    if result.code:
        parts.append(f'<div><a href="{escape(result.code)}">generated code</a></div>')
    return "".join(parts)


def _item(results: Results, item: dict[str, object]) -> str:
    item_id = str(item["id"])
    html = bool(item.get("html") or item.get("ocr"))
    viewport = item.get("viewport") or {}
    size = f"{viewport.get('width')}×{viewport.get('height')}" if isinstance(viewport, dict) else ""
    kind = escape(str(item.get("kind") or ""))
    if item.get("html"):
        note = ""
        reference = _figure(str(item["reference"]), f"reference {item_id}", "<b>reference</b>")
    else:
        text = OCR_NOTE if item.get("ocr") else PNG_NOTE
        note = f'<p class="note">{escape(text)}</p>'
        reference = _ocr_figure(str(item["reference"]), f"reference {item_id}", item)
    figures = [reference]
    for model in results.models:
        result = results.get(item_id, model)
        src = result.render if result is not None else ""
        figures.append(
            _figure(src, f"{model} render of {item_id}", _result_caption(model, result, html))
        )
    return (
        f'<section class="item" id="item-{escape(item_id)}" data-item="{escape(item_id)}">'
        f'<h2>{escape(item_id)}</h2><p class="meta">{kind} · viewport {escape(size)}</p>'
        f'{note}<div class="row">{"".join(figures)}</div></section>'
    )


def render_report(results: Results) -> str:
    items = "".join(_item(results, item) for item in results.items)
    finished = sum(
        1 for item in results.items for m in results.models if results.get(item["id"], m)
    )
    total = len(results.items) * len(results.models)
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>s2c eval: {escape(results.set_name)}</title><style>{_CSS}</style></head><body>"
        f"<h1>s2c eval: {escape(results.set_name)}</h1>"
        f'<p class="meta">stack {escape(results.stack)} · {finished} of {total} runs finished'
        f" · updated {escape(results.updated)} · metrics: docs/eval.md</p>"
        f"{_summary(results)}{items}</body></html>\n"
    )


def write_report(results: Results, out: Path) -> None:
    write_atomic(out / "report.html", render_report(results))
