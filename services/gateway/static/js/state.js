// The UI's model: a project is a list of commits (versions); each commit has variants,
// and each variant its code, history and agent events. `applyFrame` folds one server
// frame into a commit and reports what changed so the views can update just that.

import { formatDuration, plural } from "./dom.js";
import { addAccessibility } from "./accessibility.js";
import { readChanges } from "./changes.js";
import { addFidelity, addRound, bestVariant } from "./fidelity.js";
import { buildReport } from "./project.js";
import { addUsage } from "./usage.js";

export const GENERIC_ERROR = "Generation failed. Please retry.";

let localIds = 0;

export function newVariant(index, history = []) {
  return {
    index,
    model: "",
    status: "generating", // generating | complete | error | cancelled
    message: "",
    error: "",
    code: "", // the entry page (index.html)
    files: {}, // a site's other files, by path (our `setFile` frames)
    build: null, // a built project's last build, {ok, errors} (project.js)
    history: history.map((m) => ({ ...m, images: [...m.images], videos: [...(m.videos ?? [])] })),
    events: [],
    byId: new Map(),
    usage: null, // tokens and cost summed over the variant's model turns (usage.js)
    fidelity: [], // scores against the input images, one per image (fidelity.js)
    rounds: [], // the page's score per refinement round (fidelity.js, `refineRound` frames)
    changes: null, // an update's latest check beyond the selected element (changes.js)
    best: false, // the best-scoring option of its generation (fidelity.js)
    accessibility: [], // axe-core's checks, one per page and width (accessibility.js)
    startedAt: performance.now(),
    endedAt: null,
  };
}

export function newCommit({ kind, label, seedHistory, count, parent = null }) {
  return {
    id: `c${++localIds}`,
    kind, // create | update
    label,
    parent, // {commit, variant} for updates
    seedHistory,
    variants: Array.from({ length: count }, (_, i) => newVariant(i, seedHistory)),
    selected: 0,
    status: "running", // running | done | failed | cancelled
    error: "",
    demo: false,
    startedAt: performance.now(),
    endedAt: null,
  };
}

function resize(commit, count) {
  const variants = commit.variants.slice(0, count);
  for (let i = variants.length; i < count; i++) variants.push(newVariant(i, commit.seedHistory));
  commit.variants = variants;
  if (commit.selected >= count) commit.selected = 0;
}

function closeOpenEvents(variant, status, now, { except = null, types = null } = {}) {
  for (const ev of variant.events) {
    if (ev.status !== "running" || ev.id === except) continue;
    if (types && !types.includes(ev.type)) continue;
    ev.status = status;
    ev.endedAt = now;
  }
}

function textEvent(variant, type, id, delta, now) {
  let ev = variant.byId.get(id);
  const changed = [];
  if (!ev) {
    // A new message ends the previous prose message(s) of this variant.
    for (const other of variant.events) {
      if (other.status === "running" && other.type !== "tool") {
        other.status = "complete";
        other.endedAt = now;
        changed.push(other);
      }
    }
    ev = { id, type, status: "running", content: "", startedAt: now, endedAt: null };
    variant.events.push(ev);
    variant.byId.set(id, ev);
  }
  ev.content += delta;
  changed.push(ev);
  return changed;
}

function toolEvent(variant, id, name, now) {
  const ev = {
    id,
    type: "tool",
    status: "running",
    toolName: name,
    input: {},
    output: null,
    ok: null,
    startedAt: now,
    endedAt: null,
  };
  variant.events.push(ev);
  variant.byId.set(id, ev);
  return ev;
}

function finalize(variant, status, now) {
  variant.status = status;
  variant.endedAt = now;
  const closed = variant.events.filter((e) => e.status === "running");
  closeOpenEvents(variant, status === "complete" ? "complete" : "error", now);
  return closed;
}

/**
 * Applies an `appendCode` frame: `value` goes at the end of the code, or at `offset` (a
 * string index) when the server cut the code's tail there. True when the code changed;
 * a malformed frame changes nothing.
 */
function appendCode(variant, { value, offset }) {
  if (typeof value !== "string") return false;
  if (offset === undefined) {
    variant.code += value;
    return value !== "";
  }
  if (!Number.isInteger(offset) || offset < 0 || offset > variant.code.length) return false;
  const code = variant.code.slice(0, offset) + value;
  const changed = code !== variant.code;
  variant.code = code;
  return changed;
}

/**
 * Folds one frame into `commit`. Returns {variant, header, code, events, layout, error}:
 * the index of the variant touched, what changed, and the events to re-render.
 */
export function applyFrame(commit, frame, now = performance.now()) {
  const change = { variant: null, header: false, code: false, events: [], layout: false, error: null };
  if (frame.type === "error") {
    commit.error = String(frame.value ?? "");
    change.error = commit.error;
    return change;
  }
  if (frame.type === "variantCount") {
    const count = Number.parseInt(frame.value, 10);
    if (Number.isFinite(count) && count > 0 && count !== commit.variants.length) {
      resize(commit, count);
      change.layout = true;
    }
    return change;
  }
  if (frame.type === "variantModels") {
    const models = Array.isArray(frame.data?.models) ? frame.data.models : [];
    models.forEach((model, i) => {
      if (commit.variants[i]) commit.variants[i].model = String(model);
    });
    change.layout = false;
    change.allHeaders = true;
    return change;
  }
  const index = Number.isInteger(frame.variantIndex) ? frame.variantIndex : 0;
  if (index < 0 || index > 63) return change;
  if (index >= commit.variants.length) {
    resize(commit, index + 1);
    change.layout = true;
  }
  const variant = commit.variants[index];
  change.variant = index;
  switch (frame.type) {
    case "status":
      variant.message = String(frame.value ?? "");
      if (/demo model/i.test(variant.message)) commit.demo = true;
      change.header = true;
      break;
    case "thinking":
    case "assistant":
      // Upstream ignores prose deltas without an event id.
      if (typeof frame.eventId === "string" && frame.eventId) {
        change.events = textEvent(variant, frame.type, frame.eventId, String(frame.value ?? ""), now);
      }
      break;
    case "toolStart": {
      const id = frame.eventId || `tool-${index}-local-${++localIds}`;
      const before = variant.events.filter((e) => e.status === "running" && e.type !== "tool" && e.id !== id);
      closeOpenEvents(variant, "complete", now, { except: id, types: ["thinking", "assistant"] });
      let ev = variant.byId.get(id);
      if (!ev) ev = toolEvent(variant, id, String(frame.data?.name ?? ""), now);
      if (frame.data?.input && typeof frame.data.input === "object") ev.input = frame.data.input;
      if (frame.data?.name) ev.toolName = String(frame.data.name);
      change.events = [...before, ev];
      break;
    }
    case "toolResult": {
      const id = frame.eventId || `tool-${index}-local-${++localIds}`;
      let ev = variant.byId.get(id);
      if (!ev) ev = toolEvent(variant, id, String(frame.data?.name ?? ""), now);
      ev.ok = frame.data?.ok !== false;
      ev.status = ev.ok ? "complete" : "error";
      ev.output = frame.data?.output ?? null;
      ev.endedAt = now;
      change.events = [ev];
      const build = buildReport(ev.output);
      if (build) {
        variant.build = build;
        change.code = true;
      }
      break;
    }
    case "setCode":
      variant.code = String(frame.value ?? "");
      change.code = true;
      break;
    case "setFile": // ours: the whole of one of a site's other files, by path
      variant.files[String(frame.path ?? "")] = String(frame.value ?? "");
      change.code = true;
      break;
    case "appendCode": // ours (codeStream "append"): only the text not yet sent
      change.code = appendCode(variant, frame);
      break;
    case "usage": // ours: one model turn's tokens and cost
      variant.usage = addUsage(variant.usage, frame.data);
      change.header = true;
      break;
    case "fidelity": { // ours: the option's score against an input image
      variant.fidelity = addFidelity(variant.fidelity, frame.data);
      const best = bestVariant(commit.variants.map((v) => v.fidelity));
      commit.variants.forEach((v, i) => {
        v.best = i === best;
      });
      change.allHeaders = true;
      break;
    }
    case "accessibility": // ours: axe-core's check of the option's page at one width
      variant.accessibility = addAccessibility(variant.accessibility, frame.data);
      change.header = true;
      break;
    case "refineRound": // ours: a version of the page scored while it is refined
      variant.rounds = addRound(variant.rounds, frame.data);
      change.header = true;
      break;
    case "unrequestedChanges": // ours: what an update changed beyond the selected element
      variant.changes = readChanges(frame.data) ?? variant.changes;
      change.header = true;
      break;
    case "chunk": // legacy upstream frame: appends to the code
      variant.code += String(frame.value ?? "");
      change.code = true;
      break;
    case "variantComplete":
      change.events = finalize(variant, "complete", now);
      if (variant.code.trim()) {
        variant.history.push({ role: "assistant", text: variant.code, images: [], videos: [] });
      }
      change.header = true;
      break;
    case "variantError":
      variant.error = String(frame.value ?? "Generation failed.");
      change.events = finalize(variant, "error", now);
      change.header = true;
      break;
    default:
      return change;
  }
  return change;
}

/** Ends a commit's run from the client side (close code or cancel). */
export function endCommit(commit, outcome, message, now = performance.now()) {
  commit.status = outcome;
  commit.endedAt = now;
  if (outcome === "failed" && message && !commit.error) commit.error = message;
  const touched = [];
  for (const variant of commit.variants) {
    if (variant.status !== "generating") continue;
    if (outcome === "cancelled") {
      variant.status = "cancelled";
      variant.endedAt = now;
      closeOpenEvents(variant, "cancelled", now);
    } else if (outcome === "done") {
      finalize(variant, variant.code.trim() ? "complete" : "error", now);
      if (variant.status === "error") variant.error = "The generation ended without code.";
    } else {
      finalize(variant, "error", now);
      variant.error = message || GENERIC_ERROR;
    }
    touched.push(variant.index);
  }
  return touched;
}

/**
 * Why a run failed. When every option failed, each says why on its own card: the text
 * points there (quoting the reason when they all share it) instead of the server's
 * generic "Please contact support" (upstream's, kept on the wire for its UI).
 */
export function failureText(commit) {
  const failed = commit.variants.filter((v) => v.status === "error");
  if (!failed.length || failed.length < commit.variants.length) return commit.error || GENERIC_ERROR;
  const all = failed.length === 1 ? "The option" : failed.length === 2 ? "Both options" : `All ${failed.length} options`;
  const reasons = new Set(failed.map((v) => v.error));
  return reasons.size === 1 && failed[0].error ? `${all} failed: ${failed[0].error}` : `${all} failed; each option says why.`;
}

/** The run bar: `{state, text}` for a commit, `now` for the running clock. */
/** Whether every option of a running commit ended: what is left is their scores. */
export function settled(commit) {
  return commit.status === "running" && commit.variants.every((v) => v.status !== "generating");
}

export function runSummary(commit, now, reconnecting = null) {
  const elapsed = formatDuration((commit.endedAt ?? now) - commit.startedAt);
  if (reconnecting) {
    return {
      state: "reconnecting",
      text: `Connection lost: reconnecting… (try ${reconnecting.attempt} of ${reconnecting.of}) · ${elapsed}`,
    };
  }
  const count = commit.variants.length;
  const done = commit.variants.filter((v) => v.status !== "generating").length;
  const complete = commit.variants.filter((v) => v.status === "complete").length;
  const verb = commit.kind === "create" ? "Generating" : "Updating";
  if (settled(commit)) {
    // What is left is the complete options' scores (none when every option failed).
    const wait = complete ? "Scoring against the screenshot…" : "Finishing…";
    return { state: "scoring", text: `${wait} ${complete}/${count} options complete · ${elapsed}` };
  }
  const text = {
    running: `${verb} ${plural(count, "option")}… ${done}/${count} done · ${elapsed}`,
    done: `Done in ${elapsed}: ${complete}/${count} options complete`,
    failed: `Failed after ${elapsed}: ${failureText(commit)}`,
    cancelled: `Cancelled after ${elapsed}`,
  }[commit.status];
  return { state: commit.status, text };
}
