"""Pages that load their runtime from the stacks' CDNs, for the offline render tests.

Each proves its runtime ran: the Tailwind page's body is bg-red-500 (rgb(239, 68, 68) in
Tailwind 3), and the React page's body is empty until React mounts its component, whose
Tailwind classes make it red too.
"""

from __future__ import annotations

RED = (239, 68, 68)
RED_CSS = "rgb(239, 68, 68)"

_FONTS = (
    '<link href="https://fonts.googleapis.com/css2?family=Inter:wght@400;700&amp;display=swap"'
    ' rel="stylesheet">'
)

TAILWIND_PAGE = f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<script src="https://cdn.tailwindcss.com"></script>
{_FONTS}
</head>
<body class="bg-red-500" style="font-family: Inter, sans-serif">
<h1 id="title" class="text-5xl font-bold text-white p-8">Offline and red</h1>
{{lines}}
</body>
</html>
"""

REACT_PAGE = f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<script src="https://cdn.jsdelivr.net/npm/react@18.0.0/umd/react.development.js"></script>
<script src="https://cdn.jsdelivr.net/npm/react-dom@18.0.0/umd/react-dom.development.js"></script>
<script src="https://unpkg.com/@babel/standalone@7.25.6/babel.min.js"></script>
<script src="https://cdn.tailwindcss.com"></script>
{_FONTS}
</head>
<body>
<div id="root"></div>
<script type="text/babel">
function App() {{
  const [count] = React.useState(3);
  return <main id="mounted" className="min-h-screen bg-red-500 p-8 text-white">
    <h1 className="text-5xl font-bold">React mounted {{count}} times</h1>
  </main>;
}}
ReactDOM.createRoot(document.getElementById("root")).render(<App />);
</script>
</body>
</html>
"""


def tailwind_page(lines: int = 0, extra: str = "") -> str:
    """The Tailwind page, `lines` paragraphs long (so a stream of it takes a while) with
    `extra` markup at the end of its body."""
    body = "\n".join(
        f'<p class="text-white px-8 py-1">Line {i}: streamed while offline.</p>'
        for i in range(lines)
    )
    return TAILWIND_PAGE.replace("{lines}", body + extra)
