// The model picker: the agent's models from `/api/models`, offered for what the input is.
// A model that reads no images is not offered for screenshots, one that reads no video not
// for a video; a model whose key the server lacks is offered once the user has entered a
// key for its source (`credential`) in the settings. "Automatic" sends no `models` param,
// so the server chooses, as it does for the upstream UI.

/** The models, `[]` when the server cannot say (the picker then offers "Automatic" only). */
export async function loadModels(token = "", fetchImpl = globalThis.fetch) {
  try {
    const headers = token ? { Authorization: `Bearer ${token}` } : {};
    const response = await fetchImpl("/api/models", { headers });
    if (!response.ok) return [];
    const body = await response.json();
    return Array.isArray(body?.models) ? body.models.filter(isModel) : [];
  } catch {
    return [];
  }
}

function isModel(model) {
  return (
    typeof model?.id === "string" &&
    typeof model.available === "boolean" &&
    typeof model.vision === "boolean" &&
    typeof model.video === "boolean" &&
    typeof model.credential === "string"
  );
}

/** Whether the model can take this input mode's media. */
export function takesInput(model, inputMode) {
  if (inputMode === "image") return model.vision;
  if (inputMode === "video") return model.video;
  return true;
}

/** The models to offer for `inputMode`, with the keys the user entered (`settings`). */
export function pickableModels(models, inputMode, settings, sources) {
  const keyed = new Set(
    sources.filter((s) => typeof settings[s.keyParam] === "string" && settings[s.keyParam].trim()).map((s) => s.id),
  );
  return models.filter(
    (m) => m.id !== "demo" && (m.available || keyed.has(m.credential)) && takesInput(m, inputMode),
  );
}

/** The `models` param for a choice: absent for "Automatic" (the server chooses). */
export function modelsParam(choice) {
  return choice ? { models: [choice] } : {};
}

/** Fills `select` with "Automatic" and the pickable models, keeping the choice if it stays. */
export function renderModelOptions(select, models, inputMode, settings, sources) {
  const chosen = select.value;
  const options = [new Option("Automatic", "")];
  for (const model of pickableModels(models, inputMode, settings, sources)) {
    const notes = [model.tools ? "" : "no tools", model.vision ? "" : "text only"].filter(Boolean);
    options.push(new Option(notes.length ? `${model.id} (${notes.join(", ")})` : model.id, model.id));
  }
  select.replaceChildren(...options);
  select.value = options.some((o) => o.value === chosen) ? chosen : "";
}

/** The picker of the New page panel: `render` for the current input, `param` for a frame. */
export class ModelPicker {
  constructor(select, models, settings, sources) {
    Object.assign(this, { select, models, settings, sources });
  }

  /** `inputMode` as the input-mode chip holds it (set before any render). */
  render(inputMode = "text") {
    renderModelOptions(this.select, this.models, inputMode, this.settings, this.sources);
  }

  param() {
    return modelsParam(this.select.value);
  }
}
