"""The pages the demo model builds: one self-contained document per stack.

Each page is built from the user's prompt, which is untrusted input: every piece
of it is HTML-escaped before it reaches markup, and JSON-encoded with `<`, `>`
and `&` escaped before it reaches a script, so it can never close a tag, an
attribute or a `<script>`. On Vue and React the prompt only ever reaches the
page as data (`{{ page.title }}`, `{page.title}`), never as template source, so a
prompt like `{{ ... }}` is shown, not evaluated.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from string import Template
from types import MappingProxyType

DEFAULT_TITLE = "Your page"
# The edit the demo makes: the label exists once per page, and the `>`/`<` around
# it cannot come from the escaped prompt, so `CTA_OLD` matches exactly once.
CTA_OLD = ">Get started today<"
CTA_NEW = ">Start your free 14-day trial<"

STACK_LABELS: Mapping[str, str] = MappingProxyType(
    {"html_tailwind": "HTML + Tailwind", "html_css": "HTML + CSS", "bootstrap": "Bootstrap"}
    | {"react_tailwind": "React + Tailwind", "vue_tailwind": "Vue + Tailwind"}
    | {"ionic_tailwind": "Ionic + Tailwind"}
)

# The pinned CDN includes of the upstream system prompt, byte for byte.
TAILWIND = '<script src="https://cdn.tailwindcss.com"></script>'
FONT_AWESOME = '<link rel="stylesheet" href="https://cdnjs.cloudflare.com/ajax/libs/font-awesome/5.15.3/css/all.min.css">'
BOOTSTRAP = '<link href="https://cdn.jsdelivr.net/npm/bootstrap@5.3.2/dist/css/bootstrap.min.css" rel="stylesheet" integrity="sha384-T3c6CoIi6uLrA9TneNEoa7RxnatzjcDSCmG1MXxSR1GAsXEV/Dwwykc2MPK8M2HN" crossorigin="anonymous">'  # noqa: E501
# Babel is pinned: the unversioned URL now serves Babel 8, whose JSX runtime breaks in-browser.
REACT = """<script src="https://cdn.jsdelivr.net/npm/react@18.0.0/umd/react.development.js"></script>
  <script src="https://cdn.jsdelivr.net/npm/react-dom@18.0.0/umd/react-dom.development.js"></script>
  <script src="https://unpkg.com/@babel/standalone@7.25.6/babel.min.js"></script>"""
VUE = '<script src="https://registry.npmmirror.com/vue/3.3.11/files/dist/vue.global.js"></script>'
IONIC = """<script type="module" src="https://cdn.jsdelivr.net/npm/@ionic/core/dist/ionic/ionic.esm.js"></script>
  <script nomodule src="https://cdn.jsdelivr.net/npm/@ionic/core/dist/ionic/ionic.js"></script>
  <link rel="stylesheet" href="https://cdn.jsdelivr.net/npm/@ionic/core/css/ionic.bundle.css">"""
IONICONS = """<script type="module">import ionicons from 'https://cdn.jsdelivr.net/npm/ionicons/+esm'</script>
  <script nomodule src="https://cdn.jsdelivr.net/npm/ionicons/dist/esm/ionicons.min.js"></script>
  <link href="https://cdn.jsdelivr.net/npm/ionicons/dist/collection/components/icon/icon.min.css" rel="stylesheet">"""  # noqa: E501
_FONTS = '<link href="https://fonts.googleapis.com/css2?family=Inter:wght@400;500;600;700;800&amp;display=swap" rel="stylesheet">'  # noqa: E501

_CDNS: Mapping[str, str] = MappingProxyType(
    {"tailwind": TAILWIND, "fa": FONT_AWESOME, "bootstrap": BOOTSTRAP, "react": REACT, "vue": VUE}
    | {"ionic": IONIC, "ionicons": IONICONS, "fonts": _FONTS}
)


@dataclass(frozen=True, slots=True)
class _Theme:
    name: str
    tw: str  # Tailwind palette of the main colour
    acc: str  # Tailwind palette of the gradient's second colour
    primary: str  # hex of tw-600
    dark: str  # hex of tw-700
    soft: str  # hex of tw-50
    accent: str  # hex of acc-500
    split: bool  # hero with a side panel instead of centred
    eyebrow: str
    flourish: str  # the gradient words under the title


_THEMES = (
    _Theme("indigo", "indigo", "fuchsia", "#4f46e5", "#4338ca", "#eef2ff", "#d946ef", False,
           "Just launched", "made simple."),
    _Theme("emerald", "emerald", "cyan", "#059669", "#047857", "#ecfdf5", "#06b6d4", True,
           "Now in beta", "done right."),
    _Theme("rose", "rose", "orange", "#e11d48", "#be123c", "#fff1f2", "#f97316", False,
           "Fresh release", "without the fuss."),
    _Theme("sky", "sky", "violet", "#0284c7", "#0369a1", "#f0f9ff", "#8b5cf6", True,
           "Built for speed", "that just works."),
)  # fmt: skip

# (Font Awesome 5 icon, ionicon, heading, text); each variant shows three of them.
_FEATURES = (
    ("fa-bolt", "flash-outline", "Fast by default",
     "Lean markup in a single file, so the page loads in a blink on any connection."),
    ("fa-mobile-alt", "phone-portrait-outline", "Looks great on mobile",
     "A responsive layout that adapts from wide desktop screens to the smallest phones."),
    ("fa-shield-alt", "shield-checkmark-outline", "Accessible and clear",
     "Readable type, strong contrast and semantic sections that work for everyone."),
    ("fa-magic", "sparkles-outline", "Thoughtful details",
     "Soft shadows, smooth hover states and a colour theme that ties it all together."),
    ("fa-chart-line", "trending-up-outline", "Built to convert",
     "A focused hero and a clear call to action guide visitors to the next step."),
    ("fa-users", "people-outline", "Made for teams",
     "Plain HTML that anyone on the team can read, tweak and ship in minutes."),
)  # fmt: skip

_LEAD_IN = re.compile(
    r"^(?:please\s+)?(?:(?:can|could)\s+you\s+)?"
    r"(?:build|create|make|design|generate|write|code|clone)\s+(?:me\s+|us\s+)?(?:an?\s+|the\s+)?",
    re.IGNORECASE,
)
_TOPIC = re.compile(r"\s(?:for|about|of)\s+(?:(?:an?|the|my|our)\s+)?", re.IGNORECASE)


def normalize_stack(stack: str) -> str:
    return stack if stack in STACK_LABELS else "html_tailwind"


def theme_name(variant_index: int) -> str:
    return _THEMES[variant_index % len(_THEMES)].name


def demo_title(prompt_text: str) -> str:
    """A short page title from the prompt's first sentence, minus "build me a"."""
    text = " ".join(prompt_text.split())
    first = re.split(r"(?<=[.!?])\s", text, maxsplit=1)[0]
    first = _LEAD_IN.sub("", first).strip(" .!?")
    if not first:
        return DEFAULT_TITLE
    return _truncate(first[0].upper() + first[1:], 60)


def demo_page(prompt_text: str, stack: str, variant_index: int) -> str:
    """The complete HTML document the demo model creates for this prompt and stack."""
    stack = normalize_stack(stack)
    text = " ".join(prompt_text.split())
    title = demo_title(prompt_text)
    subject = f"your brief \u201c{_truncate(text, 140)}\u201d" if text else "your screenshot"
    tagline = f"Designed from {subject} and built live, one tool call at a time."
    # "Landing page for a small coffee roastery" is branded "Small coffee roastery".
    brand = _truncate(" ".join((_TOPIC.split(title)[-1] or title).split()[:3]), 24)
    brand = brand[:1].upper() + brand[1:]
    fields = {"title": title, "brand": brand, "tagline": tagline}
    theme = _THEMES[variant_index % len(_THEMES)]
    values = {
        **_CDNS,
        **{k: str(v) for k, v in asdict(theme).items()},
        **_layout(theme.split),
        "variant": str(variant_index),
        "head_title": html.escape(title),
        "description": html.escape(tagline),
        "primary_rgb": ", ".join(str(int(theme.primary[i : i + 2], 16)) for i in (1, 3, 5)),
        "data": _script_json(fields),
    }
    # React and Vue read the prompt from `page` data, never from template source.
    refer = {"react_tailwind": "{page.%s}", "vue_tailwind": "{{ page.%s }}"}.get(stack)
    values.update({k: refer % k if refer else html.escape(v) for k, v in fields.items()})
    card, page = _TEMPLATES[stack]
    features = (_FEATURES[(3 * variant_index + i) % len(_FEATURES)] for i in range(3))
    values["cards"] = "\n".join(
        Template(card).substitute(values, icon=icon, ion=ion, heading=head, text=body)
        for icon, ion, head, body in features
    )
    if stack in ("html_tailwind", "react_tailwind", "vue_tailwind"):
        hero = _TW_SPLIT_HERO if theme.split else _TW_CENTERED_HERO
        values["hero"] = Template(hero).substitute(values)
        body = Template(_TW_BODY).substitute(values)
        if stack == "react_tailwind":
            # Safe to rename blindly: this markup holds no prompt text, only `{page.…}`.
            body = body.replace(' class="', ' className="')
        values["body"] = body
    return Template(page).substitute(values)


def _truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if not text[limit - 1].isspace():  # the cut falls inside a word: drop that word
        cut = cut.rpartition(" ")[0] or cut
    return cut.rstrip(" ,;:-") + "\u2026"


def _script_json(fields: Mapping[str, str]) -> str:
    # Escaped so the data can never end the <script> element or open a comment in it.
    data = json.dumps(dict(fields), ensure_ascii=False)
    for raw, safe in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        data = data.replace(raw, safe)
    return data.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _layout(split: bool) -> dict[str, str]:
    return {
        "hero_class": "hero hero--split" if split else "hero",
        "hero_col": "col-lg-6 text-lg-start" if split else "col-lg-9 mx-auto",
        "hero_btns": "justify-content-lg-start" if split else "",
        "hero_panel": _BS_PANEL if split else "",
    }


_HEAD = """<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="UTF-8">
  <meta name="viewport" content="width=device-width, initial-scale=1.0">
  <title>$head_title</title>
  <meta name="description" content="$description">
  $fonts"""

_TW_CONFIG = """<script>tailwind.config = { theme: { extend: { fontFamily: { sans: ['Inter', 'system-ui', 'sans-serif'] } } } };</script>"""  # noqa: E501

_TW_BODY = """<header class="sticky top-0 z-10 border-b border-slate-100 bg-white/80 backdrop-blur">
  <nav class="mx-auto flex max-w-6xl items-center justify-between px-6 py-4">
    <a href="#" class="flex items-center gap-3 text-lg font-bold text-slate-900"><span class="grid h-9 w-9 place-items-center rounded-xl bg-$tw-600 text-white"><i class="fas fa-cube"></i></span>$brand</a>
    <div class="hidden gap-8 text-sm font-medium text-slate-600 md:flex"><a href="#features" class="hover:text-$tw-600">Features</a><a href="#start" class="hover:text-$tw-600">Pricing</a><a href="#contact" class="hover:text-$tw-600">Contact</a></div>
    <a href="#start" class="rounded-full bg-slate-900 px-4 py-2 text-sm font-semibold text-white hover:bg-slate-700">Sign in</a>
  </nav>
</header>
<main>
$hero
  <section id="features" class="mx-auto max-w-6xl px-6 py-20">
    <div class="mx-auto max-w-2xl text-center">
      <p class="text-sm font-semibold uppercase tracking-widest text-$tw-600">Why it works</p>
      <h2 class="mt-2 text-3xl font-bold text-slate-900 sm:text-4xl">Everything you need, nothing extra</h2>
    </div>
    <div class="mt-12 grid gap-6 md:grid-cols-3">
$cards</div>
  </section>
  <section id="start" class="px-6 pb-20">
    <div class="mx-auto max-w-5xl rounded-3xl bg-gradient-to-r from-$tw-600 to-$acc-500 px-8 py-14 text-center text-white shadow-xl">
      <h2 class="text-3xl font-bold sm:text-4xl">Ready when you are</h2>
      <p class="mx-auto mt-3 max-w-xl text-white/80">Join the teams already shipping faster. No credit card, no setup, cancel anytime.</p>
      <a href="#" class="mt-8 inline-block rounded-full bg-white px-8 py-3 font-semibold text-$tw-700 shadow hover:bg-$tw-50">Get started today</a>
    </div>
  </section>
</main>
<footer id="contact" class="border-t border-slate-100">
  <div class="mx-auto flex max-w-6xl flex-col items-center justify-between gap-4 px-6 py-8 text-sm text-slate-500 sm:flex-row">
    <p><span class="font-semibold text-slate-900">$brand</span> &middot; Built live by the s2c demo model</p>
    <div class="flex gap-5 text-lg"><a href="#" class="hover:text-$tw-600" aria-label="Twitter"><i class="fab fa-twitter"></i></a><a href="#" class="hover:text-$tw-600" aria-label="GitHub"><i class="fab fa-github"></i></a><a href="#" class="hover:text-$tw-600" aria-label="LinkedIn"><i class="fab fa-linkedin"></i></a></div>
  </div>
</footer>"""  # noqa: E501

_TW_HERO_TEXT = """<span class="inline-flex items-center gap-2 rounded-full bg-white px-4 py-1 text-sm font-medium text-$tw-700 shadow-sm ring-1 ring-$tw-100"><i class="fas fa-star"></i> $eyebrow</span>
      <h1 class="mt-6 text-4xl font-extrabold tracking-tight text-slate-900 sm:text-6xl">$title <span class="block bg-gradient-to-r from-$tw-600 to-$acc-500 bg-clip-text text-transparent">$flourish</span></h1>
      <p class="mt-6 max-w-2xl text-lg leading-8 text-slate-600 HERO_P">$tagline</p>
      <div class="mt-10 flex flex-wrap gap-4 HERO_BTNS"><a href="#features" class="rounded-full bg-$tw-600 px-7 py-3 font-semibold text-white shadow-lg shadow-$tw-600/30 hover:bg-$tw-700">Explore features</a>
        <a href="#start" class="rounded-full px-7 py-3 font-semibold text-slate-900 ring-1 ring-slate-200 hover:bg-slate-50">Learn more <i class="fas fa-arrow-right ml-1"></i></a></div>"""  # noqa: E501

_TW_CENTERED_HERO = f"""  <section class="bg-gradient-to-b from-$tw-50 to-white">
    <div class="mx-auto max-w-4xl px-6 py-24 text-center">
      {_TW_HERO_TEXT.replace(" HERO_P", " mx-auto").replace(" HERO_BTNS", " justify-center")}
    </div>
  </section>"""

_TW_SPLIT_HERO = f"""  <section class="bg-gradient-to-br from-$tw-50 via-white to-white">
    <div class="mx-auto grid max-w-6xl items-center gap-12 px-6 py-24 md:grid-cols-2">
      <div>
      {_TW_HERO_TEXT.replace(" HERO_P", "").replace(" HERO_BTNS", "")}
      </div>
      <div class="rounded-3xl bg-white p-8 shadow-2xl ring-1 ring-slate-100">
        <p class="text-sm font-semibold text-slate-500">This week</p>
        <div class="mt-4 space-y-4">
          <div class="flex items-center justify-between rounded-2xl bg-$tw-50 p-4"><span class="font-medium text-slate-700">Uptime</span><span class="text-2xl font-bold text-$tw-600">99.9%</span></div>
          <div class="flex items-center justify-between rounded-2xl bg-$tw-50 p-4"><span class="font-medium text-slate-700">Faster launches</span><span class="text-2xl font-bold text-$tw-600">2&times;</span></div>
          <div class="flex items-center justify-between rounded-2xl bg-$tw-50 p-4"><span class="font-medium text-slate-700">Happy customers</span><span class="text-2xl font-bold text-$tw-600">4.9/5</span></div>
        </div>
      </div>
    </div>
  </section>"""  # noqa: E501

_TW_CARD = """      <div class="rounded-2xl border border-slate-100 bg-white p-8 shadow-sm transition hover:-translate-y-1 hover:shadow-lg">
        <div class="grid h-12 w-12 place-items-center rounded-xl bg-$tw-50 text-xl text-$tw-600"><i class="fas $icon"></i></div>
        <h3 class="mt-5 text-lg font-semibold text-slate-900">$heading</h3><p class="mt-2 leading-relaxed text-slate-600">$text</p>
      </div>"""  # noqa: E501

_TW_HEAD_END = f"""  $tailwind
  $fa
  {_TW_CONFIG}
</head>
<body class="bg-white font-sans text-slate-700 antialiased" data-demo-variant="$variant">"""

_TAILWIND_PAGE = f"""{_HEAD}
{_TW_HEAD_END}
$body
</body>
</html>
"""

_VUE_PAGE = f"""{_HEAD}
  $vue
{_TW_HEAD_END}
<div id="app">
$body
</div>
<script>
  const {{ createApp, ref }} = Vue;
  createApp({{ setup() {{ return {{ page: ref($data) }}; }} }}).mount('#app');
</script>
</body>
</html>
"""

_REACT_PAGE = f"""{_HEAD}
  $react
{_TW_HEAD_END}
<div id="root"></div>
<script type="text/babel">
const page = $data;
function App() {{
  return (<>
$body
  </>);
}}
ReactDOM.createRoot(document.getElementById('root')).render(<App />);
</script>
</body>
</html>
"""

_CSS_CARD = """      <article class="card">
        <div class="card__icon"><i class="fas $icon"></i></div><h3>$heading</h3><p>$text</p>
      </article>"""

_CSS_PAGE = f"""{_HEAD}
  $fa
  <style>
    :root {{ --primary: $primary; --dark: $dark; --soft: $soft; --accent: $accent; --ink: #0f172a; --muted: #475569; --line: #f1f5f9; }}
    * {{ box-sizing: border-box; margin: 0; }} a {{ color: inherit; text-decoration: none; }}
    body {{ font-family: Inter, system-ui, sans-serif; color: var(--muted); line-height: 1.6; }}
    .wrap, .nav {{ max-width: 1120px; margin: 0 auto; padding: 0 24px; }}
    .nav {{ display: flex; align-items: center; justify-content: space-between; padding-block: 18px; }}
    .brand {{ display: flex; align-items: center; gap: 12px; font-weight: 700; font-size: 1.15rem; color: var(--ink); }}
    .brand span, .card__icon {{ display: grid; place-items: center; width: 40px; height: 40px; border-radius: 12px; background: var(--primary); color: #fff; }}
    .btn {{ display: inline-block; padding: 12px 28px; border-radius: 999px; font-weight: 600; background: var(--primary); color: #fff; box-shadow: 0 10px 24px -10px var(--primary); transition: transform .15s, background .15s; }}
    .btn:hover {{ background: var(--dark); transform: translateY(-2px); }} .cta .btn {{ background: #fff; color: var(--dark); }}
    .btn--ghost {{ background: transparent; color: var(--ink); box-shadow: inset 0 0 0 1px #e2e8f0; }} .btn--ghost:hover {{ background: #f8fafc; }}
    .hero {{ background: linear-gradient(180deg, var(--soft), #fff); padding: 96px 0; text-align: center; }}
    .hero h1 {{ font-size: clamp(2.2rem, 5vw, 3.8rem); line-height: 1.1; color: var(--ink); letter-spacing: -0.02em; margin-top: 20px; }}
    .hero h1 em, .cta {{ background: linear-gradient(90deg, var(--primary), var(--accent)); }}
    .hero h1 em {{ display: block; font-style: normal; -webkit-background-clip: text; background-clip: text; color: transparent; }}
    .hero p {{ font-size: 1.15rem; margin: 24px auto 0; max-width: 640px; }}
    .badge {{ display: inline-block; padding: 4px 16px; border-radius: 999px; background: #fff; color: var(--dark); font-size: .875rem; font-weight: 500; box-shadow: 0 1px 3px rgba(15, 23, 42, .1); }}
    .actions {{ display: flex; flex-wrap: wrap; gap: 16px; margin-top: 40px; justify-content: center; }}
    .panel {{ display: none; height: 280px; border-radius: 28px; background: linear-gradient(135deg, var(--primary), var(--accent)); box-shadow: 0 30px 60px -30px var(--dark); }}
    .hero--split {{ text-align: left; }} .hero--split .panel {{ display: block; }} .hero--split p {{ margin-left: 0; }}
    .hero--split .wrap {{ display: grid; grid-template-columns: 1.2fr 1fr; gap: 48px; align-items: center; }} .hero--split .actions {{ justify-content: flex-start; }}
    .grid {{ display: grid; grid-template-columns: repeat(3, 1fr); gap: 24px; padding: 80px 24px; }}
    .card {{ padding: 32px; border-radius: 20px; border: 1px solid var(--line); background: #fff; box-shadow: 0 1px 2px rgba(15, 23, 42, .06); transition: transform .15s, box-shadow .15s; }}
    .card:hover {{ transform: translateY(-4px); box-shadow: 0 20px 40px -20px rgba(15, 23, 42, .25); }}
    .card__icon {{ width: 48px; height: 48px; background: var(--soft); color: var(--primary); font-size: 1.25rem; }} .card h3 {{ color: var(--ink); margin: 20px 0 8px; }}
    .cta {{ margin: 0 auto 80px; max-width: 960px; padding: 56px 32px; border-radius: 28px; text-align: center; color: #fff; }}
    .cta h2 {{ font-size: 2rem; }} .cta p {{ opacity: .85; margin: 12px auto 32px; max-width: 520px; }}
    footer {{ border-top: 1px solid var(--line); padding: 32px 24px; text-align: center; font-size: .9rem; }}
    @media (max-width: 768px) {{ .grid, .hero--split .wrap {{ grid-template-columns: 1fr; }} .hero {{ padding: 64px 0; }} .cta {{ margin-inline: 16px; }} }}
  </style>
</head>
<body data-demo-variant="$variant">
  <header class="nav">
    <a href="#" class="brand"><span><i class="fas fa-cube"></i></span>$brand</a>
    <a href="#start" class="btn btn--ghost">Sign in</a>
  </header>
  <main>
    <section class="$hero_class">
      <div class="wrap">
        <div>
          <span class="badge"><i class="fas fa-star"></i> $eyebrow</span>
          <h1>$title <em>$flourish</em></h1>
          <p>$tagline</p>
          <div class="actions"><a href="#features" class="btn">Explore features</a><a href="#start" class="btn btn--ghost">Learn more</a></div>
        </div>
        <div class="panel" aria-hidden="true"></div>
      </div>
    </section>
    <section id="features" class="wrap grid">
$cards
    </section>
    <section id="start" class="cta">
      <h2>Ready when you are</h2>
      <p>Join the teams already shipping faster. No credit card, no setup, cancel anytime.</p>
      <a href="#" class="btn">Get started today</a>
    </section>
  </main>
  <footer><strong>$brand</strong> &middot; Built live by the s2c demo model</footer>
</body>
</html>
"""  # noqa: E501

_BS_CARD = """        <div class="col-md-4"><div class="card h-100 border-0 shadow-sm rounded-4 p-4">
          <div class="demo-icon mb-3"><i class="fas $icon"></i></div>
          <h3 class="h5 fw-semibold">$heading</h3><p class="text-secondary mb-0">$text</p>
        </div></div>"""  # noqa: E501

_BS_PANEL = """        <div class="col-lg-6 d-none d-lg-block">
          <div class="demo-gradient rounded-4 shadow-lg p-4 text-white" style="height:300px">
            <p class="fw-semibold opacity-75">This week</p><p class="display-5 fw-bold mb-0">99.9%</p>
            <p class="opacity-75">uptime</p><p class="display-5 fw-bold mb-0">2&times;</p><p class="opacity-75">faster launches</p>
          </div>
        </div>"""  # noqa: E501

_BOOTSTRAP_PAGE = f"""{_HEAD}
  $bootstrap
  $fa
  <style>
    :root {{ --demo: $primary; --demo-dark: $dark; --demo-soft: $soft; --demo-accent: $accent; }}
    body {{ font-family: Inter, system-ui, sans-serif; }} .text-demo {{ color: var(--demo); }}
    .btn-demo {{ background: var(--demo); border-color: var(--demo); color: #fff; }}
    .btn-demo:hover {{ background: var(--demo-dark); border-color: var(--demo-dark); color: #fff; }}
    .bg-demo-soft {{ background: linear-gradient(180deg, var(--demo-soft), #fff); }}
    .demo-gradient, .demo-flourish {{ background: linear-gradient(90deg, var(--demo), var(--demo-accent)); }}
    .demo-flourish {{ display: block; -webkit-background-clip: text; background-clip: text; color: transparent; }}
    .demo-icon {{ display: grid; place-items: center; width: 48px; height: 48px; border-radius: 14px; background: var(--demo-soft); color: var(--demo); font-size: 1.25rem; }}
  </style>
</head>
<body data-demo-variant="$variant">
  <nav class="navbar navbar-expand-lg bg-white border-bottom sticky-top">
    <div class="container">
      <a class="navbar-brand fw-bold d-flex align-items-center gap-2" href="#"><span class="demo-icon" style="width:36px;height:36px;font-size:1rem"><i class="fas fa-cube"></i></span>$brand</a>
      <div class="d-none d-md-flex gap-4"><a class="nav-link" href="#features">Features</a><a class="nav-link" href="#start">Pricing</a><a class="nav-link" href="#contact">Contact</a></div>
      <a href="#start" class="btn btn-dark rounded-pill px-4">Sign in</a>
    </div>
  </nav>
  <header class="bg-demo-soft py-5">
    <div class="container py-5">
      <div class="row align-items-center g-5 text-center">
        <div class="$hero_col">
          <span class="badge rounded-pill bg-white text-demo shadow-sm px-3 py-2"><i class="fas fa-star"></i> $eyebrow</span>
          <h1 class="display-4 fw-bold mt-4">$title <span class="demo-flourish">$flourish</span></h1>
          <p class="lead text-secondary mt-3">$tagline</p>
          <div class="d-flex flex-wrap gap-3 mt-4 justify-content-center $hero_btns"><a href="#features" class="btn btn-demo btn-lg rounded-pill px-4">Explore features</a><a href="#start" class="btn btn-outline-secondary btn-lg rounded-pill px-4">Learn more</a></div>
        </div>
$hero_panel
      </div>
    </div>
  </header>
  <main>
    <section id="features" class="container py-5">
      <h2 class="text-center fw-bold mb-5">Everything you need, nothing extra</h2>
      <div class="row g-4">
$cards
      </div>
    </section>
    <section id="start" class="container pb-5">
      <div class="demo-gradient rounded-4 text-white text-center p-5 shadow">
        <h2 class="fw-bold">Ready when you are</h2>
        <p class="opacity-75 mx-auto" style="max-width:520px">Join the teams already shipping faster. No credit card, no setup, cancel anytime.</p>
        <a href="#" class="btn btn-light btn-lg rounded-pill px-5 fw-semibold">Get started today</a>
      </div>
    </section>
  </main>
  <footer id="contact" class="border-top py-4 text-center text-secondary small"><strong class="text-dark">$brand</strong> &middot; Built live by the s2c demo model</footer>
</body>
</html>
"""  # noqa: E501

_ION_CARD = """        <ion-card class="m-0 rounded-2xl"><ion-card-header>
          <div class="grid h-12 w-12 place-items-center rounded-xl bg-$tw-50 text-2xl text-$tw-600"><ion-icon name="$ion"></ion-icon></div>
          <ion-card-title class="mt-4 text-lg font-semibold">$heading</ion-card-title>
        </ion-card-header><ion-card-content>$text</ion-card-content></ion-card>"""  # noqa: E501

_IONIC_PAGE = f"""{_HEAD}
  $ionic
  $tailwind
  <style>
    :root {{ --ion-color-primary: $primary; --ion-color-primary-rgb: $primary_rgb; --ion-color-primary-contrast: #ffffff; --ion-color-primary-contrast-rgb: 255, 255, 255; --ion-color-primary-shade: $dark; --ion-color-primary-tint: $accent; --ion-font-family: Inter, system-ui, sans-serif; }}
  </style>
</head>
<body data-demo-variant="$variant">
  <ion-app>
    <ion-header>
      <ion-toolbar>
        <ion-title>$brand</ion-title>
        <ion-buttons slot="end"><ion-button href="#start">Sign in</ion-button></ion-buttons>
      </ion-toolbar>
    </ion-header>
    <ion-content>
      <section class="bg-gradient-to-b from-$tw-50 to-white px-6 py-16 text-center">
        <span class="inline-flex items-center gap-2 rounded-full bg-white px-4 py-1 text-sm font-medium text-$tw-700 shadow-sm"><ion-icon name="star"></ion-icon> $eyebrow</span>
        <h1 class="mt-6 text-4xl font-extrabold tracking-tight text-slate-900">$title <span class="block bg-gradient-to-r from-$tw-600 to-$acc-500 bg-clip-text text-transparent">$flourish</span></h1>
        <p class="mx-auto mt-4 max-w-xl text-lg text-slate-600">$tagline</p>
        <div class="mt-8 flex flex-wrap justify-center gap-2"><ion-button shape="round" href="#features">Explore features</ion-button><ion-button shape="round" fill="outline" href="#start">Learn more</ion-button></div>
      </section>
      <section id="features" class="mx-auto grid max-w-5xl gap-4 px-4 py-12 md:grid-cols-3">
$cards
      </section>
      <section id="start" class="px-4 pb-12">
        <div class="mx-auto max-w-3xl rounded-3xl bg-gradient-to-r from-$tw-600 to-$acc-500 p-10 text-center text-white shadow-xl">
          <h2 class="text-3xl font-bold">Ready when you are</h2>
          <p class="mx-auto mt-3 max-w-md text-white/80">Join the teams already shipping faster. No credit card, no setup, cancel anytime.</p>
          <ion-button class="mt-6" color="light" shape="round" size="large">Get started today</ion-button>
        </div>
      </section>
      <footer class="border-t border-slate-100 py-6 text-center text-sm text-slate-500"><strong class="text-slate-900">$brand</strong> &middot; Built live by the s2c demo model</footer>
    </ion-content>
  </ion-app>
  $ionicons
</body>
</html>
"""  # noqa: E501

# stack -> (feature card, page)
_TEMPLATES: Mapping[str, tuple[str, str]] = MappingProxyType(
    {"html_tailwind": (_TW_CARD, _TAILWIND_PAGE), "react_tailwind": (_TW_CARD, _REACT_PAGE)}
    | {"vue_tailwind": (_TW_CARD, _VUE_PAGE), "ionic_tailwind": (_ION_CARD, _IONIC_PAGE)}
    | {"html_css": (_CSS_CARD, _CSS_PAGE), "bootstrap": (_BS_CARD, _BOOTSTRAP_PAGE)}
)
