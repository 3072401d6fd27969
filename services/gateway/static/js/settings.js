// Settings: model API keys and generation toggles, kept in this browser's localStorage
// only (they are sent with each generation, as the upstream UI does).

const STORAGE_KEY = "s2c.settings.v1";

export const DEFAULT_SETTINGS = Object.freeze({
  openAiApiKey: "",
  anthropicApiKey: "",
  geminiApiKey: "",
  replicateApiKey: "",
  openAiBaseURL: "",
  imageGeneration: true,
  assetExtraction: true,
  stack: "html_tailwind",
  theme: "auto",
});

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

const KEY_FIELDS = ["openAiApiKey", "anthropicApiKey", "geminiApiKey", "replicateApiKey", "openAiBaseURL"];
const FLAG_FIELDS = ["imageGeneration", "assetExtraction"];

export function hasAnyModelKey(settings) {
  return ["openAiApiKey", "anthropicApiKey", "geminiApiKey"].some((k) => settings[k]?.trim());
}

/** Wires the <dialog id="settings-dialog"> form to the settings object. */
export function bindSettingsDialog(dialog, settings, onSave) {
  const form = dialog.querySelector("form");
  const field = (name) => form.elements.namedItem(name);
  function fill() {
    for (const name of KEY_FIELDS) field(name).value = settings[name] ?? "";
    for (const name of FLAG_FIELDS) field(name).checked = Boolean(settings[name]);
  }
  form.addEventListener("submit", (event) => {
    if (event.submitter?.value !== "save") return;
    for (const name of KEY_FIELDS) settings[name] = field(name).value.trim();
    for (const name of FLAG_FIELDS) settings[name] = field(name).checked;
    saveSettings(settings);
    onSave();
  });
  form.querySelector("[data-action=clear-keys]").addEventListener("click", () => {
    for (const name of KEY_FIELDS) field(name).value = "";
  });
  return {
    open() {
      fill();
      dialog.showModal();
    },
  };
}
