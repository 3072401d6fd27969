// The agent activity feed of one variant: thinking and assistant messages grouped by
// event id, and every tool step with its input and output summaries, ok/error state and
// timing (toolStart → toolResult). Nodes are created once per event and updated in place,
// so open/closed sections and the scroll position survive a fast stream.

import {
  clear,
  formatCount,
  formatDuration,
  formatStepTime,
  h,
  icon,
  markdown,
  plural,
  safeImageUrl,
  shortJson,
  truncate,
} from "./dom.js";

const TOOL_ICONS = {
  create_file: "file",
  edit_file: "edit",
  screenshot_preview: "camera",
  generate_images: "sparkles",
  remove_background: "scissors",
  edit_image: "image",
  save_assets: "save",
  extract_assets: "search",
  retrieve_option: "layers",
};

// Tools whose body is worth keeping open once they are done.
const KEEP_OPEN = new Set(["edit_file", "screenshot_preview", "generate_images", "remove_background", "edit_image", "extract_assets"]);

function arr(value) {
  return Array.isArray(value) ? value : [];
}

function obj(value) {
  return value && typeof value === "object" && !Array.isArray(value) ? value : {};
}

/** A short one-line summary of arbitrary tool JSON. */
function summarize(value) {
  const entries = Object.entries(obj(value)).filter(([, v]) => v !== null && v !== undefined && v !== "");
  if (!entries.length) return "—";
  return entries
    .slice(0, 3)
    .map(([k, v]) => {
      if (Array.isArray(v)) return `${k}: ${plural(v.length, "item")}`;
      if (typeof v === "object") return `${k}: {…}`;
      if (typeof v === "string" && v.startsWith("data:")) return `${k}: data URL`;
      return `${k}: ${truncate(String(v).replace(/\s+/g, " "), 48)}`;
    })
    .join(" · ");
}

function errorText(output) {
  const error = obj(output).error;
  if (!error) return "";
  return typeof error === "string" ? error : JSON.stringify(error);
}

function lengthOf(x) {
  if (typeof x?.contentLength === "number") return x.contentLength;
  if (typeof x?.content === "string") return x.content.length;
  return null;
}

function fileSummary(x) {
  const path = typeof x?.path === "string" && x.path ? x.path : "index.html";
  const length = lengthOf(x);
  return length === null ? path : `${path} · ${formatCount(length)} chars`;
}

function thumb(url, caption, onImage) {
  const src = safeImageUrl(url);
  if (!src) return h("div", { class: "thumb thumb-missing" }, h("span", { text: "Failed" }), caption ? h("small", { text: caption }) : null);
  return h(
    "figure",
    { class: "thumb" },
    h(
      "button",
      { type: "button", class: "thumb-button", "aria-label": `Open ${caption || "image"}`, onclick: () => onImage(src, caption) },
      h("img", { src, alt: caption || "Tool image", loading: "lazy", decoding: "async" }),
    ),
    caption ? h("figcaption", { text: caption }) : null,
  );
}

/** Title, icon, input/output summaries and special body content, per tool (as upstream). */
function describeTool(ev, variant, onImage) {
  const name = ev.toolName || "tool";
  const input = obj(ev.input);
  const output = obj(ev.output);
  // A cancelled step never finished: it keeps its in-progress title.
  const running = ev.status === "running" || ev.status === "cancelled";
  const done = !running;
  const d = { icon: TOOL_ICONS[name] ?? "tool", title: "", input: summarize(input), output: "", body: [] };
  switch (name) {
    case "create_file":
      d.title = running ? "Creating file" : "Created file";
      d.input = fileSummary(input);
      d.output = fileSummary(output);
      if (ev.status === "running" && variant.code) {
        const tail = variant.code.split("\n").slice(-12).join("\n");
        d.body.push(h("pre", { class: "code-tail", "aria-label": "Latest lines of the file" }, h("code", { text: tail })));
      }
      break;
    case "edit_file": {
      d.title = running ? "Editing file" : "Edited file";
      const edits = arr(output.edits).length ? arr(output.edits) : arr(input.edits).length ? arr(input.edits) : input.old_text !== undefined ? [input] : [];
      d.input = `${typeof input.path === "string" ? input.path : "index.html"} · ${plural(edits.length || 1, "edit")}`;
      const replaced = arr(output.edits).reduce((n, e) => n + (Number(e.replaced) || 0), 0);
      d.output = ev.output ? `replaced ${plural(replaced, "occurrence")}` : "";
      for (const edit of edits) {
        d.body.push(
          h(
            "div",
            { class: "diff", testid: "edit-diff" },
            h("pre", { class: "diff-del", "aria-label": "Old text" }, h("code", { text: String(edit.old_text ?? "") })),
            h("pre", { class: "diff-ins", "aria-label": "New text" }, h("code", { text: String(edit.new_text ?? "") })),
            edit.replaced !== undefined ? h("small", { class: "muted", text: `Replaced ${plural(Number(edit.replaced), "time")}` }) : null,
          ),
        );
      }
      break;
    }
    case "screenshot_preview": {
      d.title = running ? "Screenshotting preview" : "Screenshotted preview";
      d.input = "desktop + mobile";
      const shots = arr(output.screenshots);
      d.output = ev.output ? (shots.length ? shots.map((s) => s.viewport ?? "image").join(" + ") : "no screenshots") : "";
      if (ev.status === "running") d.body.push(h("p", { class: "muted", text: "Rendering desktop and mobile previews…" }));
      else if (shots.length || !errorText(output)) {
        const byViewport = (vp) => shots.find((s) => s.viewport === vp);
        const figures = ["desktop", "mobile"].map((vp) => thumb(byViewport(vp)?.image_url, vp, onImage));
        for (const extra of shots.filter((s) => !["desktop", "mobile"].includes(s.viewport))) {
          figures.push(thumb(extra.image_url, String(extra.viewport ?? "screenshot"), onImage));
        }
        d.body.push(h("div", { class: "shots", testid: "screenshots" }, figures));
      }
      break;
    }
    case "generate_images": {
      const images = arr(output.images);
      const count = images.length || Number(input.count) || arr(input.prompts).length || 1;
      d.title = `${running ? "Generating" : "Generated"} ${plural(count, "image")}`;
      d.input = arr(input.prompts).length ? truncate(arr(input.prompts).join(" · "), 80) : d.input;
      d.output = images.length ? `${images.filter((i) => i.url).length} of ${images.length} ok` : "";
      if (running) d.body.push(h("ul", { class: "plain" }, arr(input.prompts).map((p) => h("li", { text: String(p) }))));
      else d.body.push(h("div", { class: "thumbs-grid" }, images.map((i) => thumb(i.url, truncate(i.prompt ?? "", 60), onImage))));
      break;
    }
    case "remove_background": {
      const images = arr(output.images);
      const count = images.length || arr(input.image_urls).length || 1;
      d.title = running ? (count === 1 ? "Removing background" : `Removing ${count} backgrounds`) : count === 1 ? "Background removed" : `Removed ${count} backgrounds`;
      d.input = plural(arr(input.image_urls).length, "image");
      d.output = images.length ? `${images.filter((i) => i.result_url).length} of ${images.length} ok` : "";
      const list = running ? arr(input.image_urls).map((u) => thumb(u, "", onImage)) : images.map((i) => thumb(i.result_url, "Result", onImage));
      d.body.push(h("div", { class: "thumbs-grid checker" }, list));
      break;
    }
    case "edit_image": {
      const refs = arr(input.image_urls).length;
      d.title = running ? (refs > 1 ? `Editing image with ${refs} references` : "Editing image") : "Edited image";
      const prompt = input.prompt ?? obj(output.image).prompt ?? "";
      d.input = truncate(prompt, 80) || d.input;
      const result = obj(output.image).result_url;
      d.output = result ? "result ready" : ev.output ? "no result" : "";
      if (prompt) d.body.push(h("p", { class: "clamp" }, String(prompt)));
      if (done && result) d.body.push(h("div", { class: "thumbs-grid" }, thumb(result, "Result", onImage)));
      break;
    }
    case "save_assets": {
      const images = arr(output.images);
      const count = images.length || arr(input.asset_ids).length || 1;
      d.title = `${running ? "Saving" : "Saved"} ${count === 1 ? "asset" : `${count} assets`}`;
      d.input = truncate(arr(input.asset_ids).join(", "), 80) || d.input;
      d.output = images.length ? plural(images.filter((i) => i.public_url).length, "permanent URL") : "";
      if (done) d.body.push(h("div", { class: "thumbs-grid" }, images.map((i) => thumb(i.public_url, String(i.asset_id ?? ""), onImage))));
      break;
    }
    case "extract_assets": {
      const assets = arr(output.assets);
      const wanted = arr(input.asset_descriptions);
      const good = assets.filter((a) => (a.public_url || a.data_url) && !["missing", "error"].includes(a.status));
      if (running) d.title = wanted.length === 1 ? "Extracting asset" : `Extracting ${wanted.length} assets`;
      else if (!good.length) d.title = "Could not extract assets";
      else if (good.length < assets.length) d.title = `Extracted ${good.length} of ${assets.length} assets`;
      else d.title = good.length === 1 ? "Extracted asset" : `Extracted ${good.length} assets`;
      d.input = truncate(wanted.join(" · "), 80) || d.input;
      d.output = ev.output ? `${good.length} of ${assets.length} found` : "";
      if (running) d.body.push(h("ul", { class: "plain" }, wanted.map((w) => h("li", { text: String(w) }))));
      else d.body.push(h("div", { class: "thumbs-grid" }, good.map((a) => thumb(a.public_url || a.data_url, truncate(a.description ?? "", 60), onImage))));
      break;
    }
    case "retrieve_option":
      d.title = running ? "Retrieving option" : "Retrieved option";
      d.input = input.option_number !== undefined ? `option ${input.option_number}` : d.input;
      d.output = ev.output ? summarize(output) : "";
      break;
    default:
      d.title = running ? `Running ${name}` : `Ran ${name}`;
      d.output = ev.output ? summarize(output) : "";
  }
  const error = errorText(output) || (ev.ok === false && !ev.output ? "The tool failed." : "");
  if (error) {
    d.output = truncate(error, 120);
    d.body.push(h("div", { class: "tool-error", role: "alert" }, h("strong", { text: "Error" }), h("p", { text: error })));
  }
  if (ev.status === "cancelled") d.output = "cancelled";
  else if (ev.status === "running") d.output = "running…";
  return d;
}

function stateOf(ev) {
  if (ev.status === "running") return "running";
  if (ev.status === "cancelled") return "cancelled";
  return ev.status === "error" || ev.ok === false ? "error" : "ok";
}

export class ActivityView {
  constructor(index, { onImage }) {
    this.index = index;
    this.onImage = onImage;
    this.nodes = new Map();
    this.follow = true;
    this.title = h("span", { class: "activity-title", testid: `activity-${index}-summary` }, "Waiting for the agent…");
    this.el = h(
      "section",
      { class: "activity-panel", "aria-label": `Agent activity for option ${index + 1}` },
      h("header", { class: "activity-head" }, icon("sparkles"), this.title),
    );
    this.list = h("ol", { class: "activity", testid: `activity-${index}` });
    this.list.addEventListener("scroll", () => {
      const { scrollTop, scrollHeight, clientHeight } = this.list;
      this.follow = scrollHeight - scrollTop - clientHeight < 40;
    });
    this.el.append(this.list);
  }

  reset(variant) {
    clear(this.list);
    this.nodes.clear();
    for (const ev of variant.events) this.render(variant, ev);
    this.updateHead(variant, performance.now());
  }

  render(variant, ev) {
    let node = this.nodes.get(ev.id);
    if (!node) {
      node = this._create(ev);
      this.nodes.set(ev.id, node);
      this.list.append(node.li);
    }
    if (ev.type === "tool") this._updateTool(node, ev, variant);
    else this._updateText(node, ev);
    this._scroll();
  }

  /** Re-renders running create_file steps, whose body tails the variant's code. */
  refreshCode(variant) {
    for (const ev of variant.events) {
      if (ev.type === "tool" && ev.status === "running" && ev.toolName === "create_file") this.render(variant, ev);
    }
  }

  _scroll() {
    if (this.follow) this.list.scrollTop = this.list.scrollHeight;
  }

  _create(ev) {
    if (ev.type === "assistant") {
      const body = h("div", { class: "bubble" });
      const li = h("li", { class: "step step-assistant", dataset: { kind: "assistant", eventId: ev.id } }, icon("chat", "step-icon"), body);
      return { li, body };
    }
    if (ev.type === "thinking") {
      const title = h("span", { class: "step-title" });
      const peek = h("span", { class: "step-peek" });
      const body = h("div", { class: "step-body" });
      const details = h("details", {}, h("summary", {}, icon("brain", "step-icon"), title, peek), body);
      const li = h("li", { class: "step step-thinking", dataset: { kind: "thinking", eventId: ev.id } }, details);
      return { li, title, peek, body, details };
    }
    const title = h("span", { class: "step-title" });
    const name = h("code", { class: "tool-name", text: ev.toolName || "tool" });
    const time = h("span", { class: "tool-time", testid: "tool-time" });
    const badge = h("span", { class: "state-badge", testid: "tool-state" });
    const toolIcon = h("span", { class: "tool-icon" });
    const summary = h("summary", {}, toolIcon, h("span", { class: "tool-heading" }, title, name), time, badge);
    const inputEl = h("dd", { testid: "tool-input" });
    const outputEl = h("dd", { testid: "tool-output" });
    const extra = h("div", { class: "tool-extra" });
    const raw = h("pre", { class: "raw-json" });
    const rawDetails = h("details", { class: "raw" }, h("summary", { text: "Raw input & output" }), raw);
    rawDetails.addEventListener("toggle", () => {
      if (rawDetails.open) raw.textContent = `input: ${shortJson(node.ev.input)}\n\noutput: ${shortJson(node.ev.output)}`;
    });
    const body = h(
      "div",
      { class: "tool-body" },
      h("dl", { class: "tool-io" }, h("dt", { text: "Input" }), inputEl, h("dt", { text: "Output" }), outputEl),
      extra,
      rawDetails,
    );
    const details = h("details", { open: true }, summary, body);
    const li = h("li", { class: "step step-tool", testid: "tool-step", dataset: { kind: "tool", eventId: ev.id } }, details);
    const node = { li, details, title, name, time, badge, toolIcon, inputEl, outputEl, extra, raw, rawDetails, ev, userToggled: false, iconName: "" };
    summary.addEventListener("click", () => {
      node.userToggled = true;
    });
    return node;
  }

  _updateText(node, ev) {
    if (ev.type === "assistant") {
      clear(node.body).append(markdown(ev.content));
      node.li.dataset.state = ev.status;
      return;
    }
    node.li.dataset.state = ev.status;
    node.title.textContent =
      ev.status === "running" ? "Thinking" : `Thought for ${formatDuration((ev.endedAt ?? ev.startedAt) - ev.startedAt)}`;
    node.peek.textContent = truncate(ev.content.replace(/\s+/g, " ").trim(), 160);
    clear(node.body).append(markdown(ev.content));
  }

  _updateTool(node, ev, variant) {
    node.ev = ev;
    const d = describeTool(ev, variant, this.onImage);
    const state = stateOf(ev);
    node.li.dataset.tool = ev.toolName;
    node.li.dataset.state = state;
    if (node.iconName !== d.icon) {
      node.iconName = d.icon;
      clear(node.toolIcon).append(icon(d.icon));
    }
    node.title.textContent = d.title;
    node.name.textContent = ev.toolName || "tool";
    node.badge.textContent = { running: "running", ok: "ok", error: "error", cancelled: "cancelled" }[state];
    node.inputEl.textContent = d.input || "—";
    node.outputEl.textContent = d.output || "—";
    clear(node.extra).append(...d.body);
    if (node.rawDetails.open) node.raw.textContent = `input: ${shortJson(ev.input)}\n\noutput: ${shortJson(ev.output)}`;
    this._time(node, ev, performance.now());
    if (!node.userToggled) {
      node.details.open = state === "running" || state === "error" || KEEP_OPEN.has(ev.toolName);
    }
  }

  _time(node, ev, now) {
    const end = ev.endedAt ?? now;
    node.time.textContent = formatStepTime(end - ev.startedAt);
    node.time.title = ev.endedAt ? "From tool start to tool result" : "Running";
  }

  /** Called every second: running timers. */
  tick(variant, now) {
    for (const ev of variant.events) {
      if (ev.type === "tool" && ev.status === "running") {
        const node = this.nodes.get(ev.id);
        if (node) this._time(node, ev, now);
      }
    }
    this.updateHead(variant, now);
  }

  updateHead(variant, now) {
    const steps = variant.events.filter((e) => e.type !== "assistant").length;
    const elapsed = formatDuration((variant.endedAt ?? now) - variant.startedAt);
    let text;
    if (variant.status === "generating") text = variant.events.length ? `Working… ${elapsed}` : `Starting… ${elapsed}`;
    else if (variant.status === "complete") text = `Worked through ${plural(steps, "step")} in ${elapsed}`;
    else if (variant.status === "cancelled") text = `Cancelled after ${plural(steps, "step")} (${elapsed})`;
    else text = `Stopped after ${plural(steps, "step")} (${elapsed})`;
    this.title.textContent = text;
    this.el.dataset.state = variant.status;
  }
}
