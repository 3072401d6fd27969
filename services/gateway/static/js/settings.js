// Settings: model API keys and generation toggles, kept in this browser's localStorage
// only (they are sent with each generation, as the upstream UI does). Which keys there
// are comes from the server (`/api/providers`): each credential source names the
// upstream params that carry its key and, for some, a base URL; the settings fields and
// the params frame are built from that list, so a new source needs no change here.

import { h } from "./dom.js";

const STORAGE_KEY = "s2c.settings.v1";

export const DEFAULT_SETTINGS = Object.freeze({
  imageGeneration: true,
  assetExtraction: true,
  stack: "html_tailwind",
  theme: "auto",
});

/** The credential sources, `[]` when the server cannot say (its own keys still apply). */
export async function loadCredentialSources(token = "", fetchImpl = globalThis.fetch) {
  try {
    const headers = token ? { Authorization: `Bearer ${token}` } : {};
    const response = await fetchImpl("/api/providers", { headers });
    if (!response.ok) return [];
    const body = await response.json();
    return Array.isArray(body?.providers) ? body.providers.filter(isSource) : [];
  } catch {
    return [];
  }
}

function isSource(source) {
  return (
    typeof source?.id === "string" &&
    typeof source.displayName === "string" &&
    typeof source.keyParam === "string" &&
    (source.baseUrlParam === null || typeof source.baseUrlParam === "string")
  );
}

/**
 * The settings fields of the sources, in order: a key field each, then a base URL field
 * for the sources whose key may go to a base URL the user names. `name` is the upstream
 * param, which is also the name the value is stored under.
 */
export function credentialFields(sources) {
  const fields = [];
  for (const source of sources) {
    fields.push({
      name: source.keyParam,
      label: `${source.displayName} API key`,
      hint: source.purpose ?? "",
      type: "password",
      placeholder: "",
    });
  }
  for (const source of sources) {
    if (!source.baseUrlParam) continue;
    fields.push({
      name: source.baseUrlParam,
      label: `${source.displayName} base URL`,
      hint: `optional, with your ${source.displayName} key`,
      type: "url",
      placeholder: "the provider's own endpoint",
    });
  }
  return fields;
}

/** The credential params of a frame: every source's param, null unless entered. */
export function credentialParams(settings, sources) {
  const value = (v) => (typeof v === "string" && v.trim() ? v.trim() : null);
  return Object.fromEntries(credentialFields(sources).map((f) => [f.name, value(settings[f.name])]));
}

export function loadSettings() {
  try {
    const stored = JSON.parse(localStorage.getItem(STORAGE_KEY) ?? "{}");
    return { ...DEFAULT_SETTINGS, ...(stored && typeof stored === "object" ? stored : {}) };
  } catch {
    return { ...DEFAULT_SETTINGS };
  }
}

export function saveSettings(settings) {
  try {
    localStorage.setItem(STORAGE_KEY, JSON.stringify(settings));
  } catch {
    // Private mode or a full quota: the settings still apply to this page.
  }
}

const FLAG_FIELDS = ["imageGeneration", "assetExtraction"];

export function hasAnyModelKey(settings, sources) {
  return sources.some((s) => s.models && settings[s.keyParam]?.trim());
}

function renderField(field) {
  const id = `setting-${field.name}`;
  const label = h("label", { for: id }, field.label);
  if (field.hint) label.append(" ", h("span", { class: "label-hint", text: field.hint }));
  const input = h("input", {
    id,
    name: field.name,
    type: field.type,
    autocomplete: "off",
    spellcheck: "false",
    testid: `setting-${field.name}`,
  });
  if (field.placeholder) input.placeholder = field.placeholder;
  return h("div", { class: "field" }, label, input);
}

/** Wires the <dialog id="settings-dialog"> form to the settings object. */
export function bindSettingsDialog(dialog, settings, sources, onSave) {
  const form = dialog.querySelector("form");
  const fields = credentialFields(sources);
  dialog.querySelector("[data-credential-fields]").replaceChildren(...fields.map(renderField));
  const field = (name) => form.elements.namedItem(name);
  function fill() {
    for (const { name } of fields) field(name).value = settings[name] ?? "";
    for (const name of FLAG_FIELDS) field(name).checked = Boolean(settings[name]);
  }
  form.addEventListener("submit", (event) => {
    if (event.submitter?.value !== "save") return;
    for (const { name } of fields) settings[name] = field(name).value.trim();
    for (const name of FLAG_FIELDS) settings[name] = field(name).checked;
    saveSettings(settings);
    onSave();
  });
  form.querySelector("[data-action=clear-keys]").addEventListener("click", () => {
    for (const { name } of fields) field(name).value = "";
  });
  return {
    open() {
      fill();
      dialog.showModal();
    },
  };
}
