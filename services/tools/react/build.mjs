// Bundles one react_vite project: its script and its stylesheet (docs/react.md).
//
// A build process serves one request at a time, one JSON line each way, for as long as
// react_build.py keeps it. Request: {"files": {"<path>": "<content>"}, "allowed":
// ["react", ...], "entry": "src/main.tsx"}. Answer: {"ok": true, "js": "...", "css":
// "..."} or {"ok": false, "errors": [{file, line, column, text}]}. The page around them
// is react_build.py's. Usage: node build.mjs <vendor/node_modules>. Nothing of the project is written to disk
// and no project file is ever executed (Tailwind's config is ours, not the model's).
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import readline from "node:readline";

const vendorDir = path.resolve(process.argv[2] ?? "");
const require = createRequire(path.join(vendorDir, "_"));
const esbuild = require("esbuild");
const postcss = require("postcss");
const tailwindcss = require("tailwindcss");

const EXTENSIONS = [".tsx", ".ts", ".jsx", ".js", ".css", ".json"];
const LOADERS = { ".tsx": "tsx", ".ts": "ts", ".jsx": "jsx", ".js": "jsx", ".css": "css", ".json": "json" };
const SOURCE = /\.(tsx|ts|jsx|js|html)$/;
const MAX_ERRORS = 5;

// `./x`, `../x`, `/src/x` and `@/x` (shadcn's alias for src/) name project files.
const projectPath = (spec, importer) => {
  if (spec.startsWith("@/")) return path.posix.join("src", spec.slice(2));
  if (spec.startsWith("/")) return spec.slice(1);
  return path.posix.join(path.posix.dirname(importer), spec);
};

const findFile = (files, base) => {
  if (base in files) return base;
  for (const ext of EXTENSIONS) if (base + ext in files) return base + ext;
  for (const ext of EXTENSIONS) if (`${base}/index${ext}` in files) return `${base}/index${ext}`;
  return null;
};

const packageOf = (spec) => {
  const parts = spec.split("/");
  return spec.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
};

const tailwindCss = async (css, from, files) => {
  const content = Object.entries(files)
    .filter(([p]) => SOURCE.test(p))
    .map(([p, raw]) => ({ raw, extension: path.extname(p).slice(1) }));
  const config = { content, theme: { extend: {} }, plugins: [] };
  const result = await postcss([tailwindcss(config)]).process(css, { from });
  return result.css;
};

// lucide-react's entry re-exports ~1,500 icon modules: parsing them all cost ~0.6 s of a
// build. A project's named imports of it are answered by a module re-exporting only those
// names from the entry's own files (any other form of import gets the whole entry).
const LUCIDE_DIR = path.join(vendorDir, "lucide-react", "dist", "esm");
const LUCIDE_EXPORTS = new Map(); // exported name -> [module, its name there]
for (const match of fs
  .readFileSync(path.join(LUCIDE_DIR, "lucide-react.mjs"), "utf8")
  .matchAll(/export \{([^}]*)\} from '\.\/([^']+)'/g)) {
  for (const part of match[1].split(",")) {
    const [inner, outer] = part.trim().split(/\s+as\s+/);
    LUCIDE_EXPORTS.set(outer ?? inner, [match[2], inner]);
  }
}
const LUCIDE_NAMED = /import\s*\{([^}]*)\}\s*from\s*["']lucide-react["']/g;
const LUCIDE_ANY = /from\s*["']lucide-react["']|import\s*\(\s*["']lucide-react["']/g;

const lucideModule = (files) => {
  const names = new Set();
  let named = 0;
  let any = 0;
  for (const source of Object.values(files)) {
    any += (source.match(LUCIDE_ANY) ?? []).length;
    for (const match of source.matchAll(LUCIDE_NAMED)) {
      named += 1;
      for (const part of match[1].split(",")) {
        const name = part.trim().replace(/^type\s+/, "").split(/\s+as\s+/)[0];
        if (name) names.add(name);
      }
    }
  }
  if (any !== named) return null;
  const lines = [];
  for (const name of names) {
    const found = LUCIDE_EXPORTS.get(name);
    // Not there: a type (elided) or a wrong name, which esbuild reports at the import.
    if (found !== undefined) lines.push(`export { ${found[1]} as ${name} } from "./${found[0]}";`);
  }
  return lines.join("\n");
};

// The project being built: esbuild's contexts outlive one build, their plugin reads this.
let current = { files: {}, allowed: [] };

const projectPlugin = () => ({
  name: "project",
  setup(build) {
    build.onResolve({ filter: /.*/ }, (args) => {
      const { files, allowed } = current;
      if (args.kind === "entry-point") return { path: args.path, namespace: "project" };
      if (args.namespace !== "project") return undefined; // inside a vendored package
      const spec = args.path;
      if (spec.startsWith(".") || spec.startsWith("/") || spec.startsWith("@/")) {
        const found = findFile(files, projectPath(spec, args.importer));
        if (found === null) {
          return { errors: [{ text: `cannot find "${spec}" in the project (from ${args.importer})` }] };
        }
        return { path: found, namespace: "project" };
      }
      if (!allowed.includes(packageOf(spec))) {
        return {
          errors: [{ text: `"${spec}" is not available: imports are limited to ${allowed.join(", ")} and project files` }],
        };
      }
      if (spec === "lucide-react" && lucideModule(files) !== null) {
        return { path: "lucide-react", namespace: "lucide" };
      }
      return build.resolve(spec, { kind: args.kind, resolveDir: vendorDir });
    });
    build.onLoad({ filter: /.*/, namespace: "lucide" }, () => ({
      contents: lucideModule(current.files),
      loader: "js",
      resolveDir: LUCIDE_DIR,
    }));
    build.onLoad({ filter: /.*/, namespace: "project" }, async (args) => {
      const { files } = current;
      const ext = path.extname(args.path);
      const loader = LOADERS[ext];
      if (loader === undefined) return { errors: [{ text: `cannot import ${args.path}: not a module` }] };
      let contents = files[args.path];
      if (loader === "css") contents = await tailwindCss(contents, args.path, files);
      return { contents, loader };
    });
  },
});

const location = (message) => ({
  file: (message.location?.file ?? "").replace(/^project:/, ""),
  line: message.location?.line ?? 0,
  column: message.location?.column ?? 0,
  text: message.text,
});

// One esbuild context per entry path, kept: a rebuild reparses only what changed, so the
// vendored packages (lucide-react alone is ~1,500 modules) are read once per process.
const MAX_CONTEXTS = 4;
const contexts = new Map();

const contextFor = async (entry) => {
  let context = contexts.get(entry);
  if (context === undefined) {
    if (contexts.size >= MAX_CONTEXTS) {
      const [oldest, stale] = contexts.entries().next().value;
      contexts.delete(oldest);
      await stale.dispose();
    }
    context = await esbuild.context({
      entryPoints: [entry],
      bundle: true,
      write: false,
      outdir: "out",
      format: "esm",
      target: "es2020",
      jsx: "automatic",
      minify: true,
      logLevel: "silent",
      define: { "process.env.NODE_ENV": '"production"' },
      plugins: [projectPlugin()],
    });
    contexts.set(entry, context);
  }
  return context;
};

const build = async ({ files, allowed, entry }) => {
  current = { files, allowed };
  let result;
  try {
    result = await (await contextFor(entry)).rebuild();
  } catch (failure) {
    if (!failure.errors) throw failure;
    return { ok: false, errors: failure.errors.slice(0, MAX_ERRORS).map(location) };
  }
  let js = "";
  let css = "";
  for (const file of result.outputFiles) {
    if (file.path.endsWith(".js")) js += file.text;
    else if (file.path.endsWith(".css")) css += file.text;
  }
  return { ok: true, js, css };
};

const failed = (error) => ({
  ok: false,
  errors: [{ file: "", line: 0, column: 0, text: String(error?.message ?? error) }],
});

for await (const line of readline.createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  let answer;
  try {
    answer = await build(JSON.parse(line));
  } catch (error) {
    answer = failed(error);
  }
  process.stdout.write(`${JSON.stringify(answer)}\n`);
}
