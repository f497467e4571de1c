// The study page: facts, the Appendix 2.B parallel-coordinates plot (brushing and hover; pruned trials
// grey at the step where they were stopped, or COMPLETE only), importances with bootstrap whiskers,
// learning curves of the best trials, a population study's members (population.js), the trial table
// and the best-checkpoint download. While the
// sweep runs it polls the study every 5 s and redraws what changed.
"use strict";

const studyName = decodeURIComponent(location.pathname.split("/").pop());
const base = `/studies/${encodeURIComponent(studyName)}`;
const PAGE = 50;
const view = { offset: 0, compared: "", finished: -1, plot: null, fraction: 0.075, include: "all", objective: "val_loss" };
const { el, fmt } = rnntune;

function showError(message) {
  document.getElementById("error").textContent = message;
}

function renderFacts(study) {
  document.title = `rnntune — ${study.name}`;
  document.getElementById("name").textContent = study.name;
  document.getElementById("crumb").textContent = study.name;
  const status = document.getElementById("status");
  status.textContent = study.status;
  status.className = `status ${study.status}`;
  const c = study.counts;
  const facts = [
    ["progress", study.progress === null ? "–" : `${Math.round(100 * study.progress)}% of ${study.n_trials}`],
    ["complete", c.COMPLETE], ["pruned", c.PRUNED], ["failed", c.FAIL], ["running", c.RUNNING],
    ["best objective", fmt(study.best_value)],
    ["best trial", study.best_trial ? `#${study.best_trial.number}` : "–"],
    ["space", study.space || "–"], ["sampler", study.sampler || "–"],
  ];
  const attrs = study.user_attrs || {};
  // The sweep spec holds keep_top; a study written before the spec kept it as its own attribute.
  const keepTop = (attrs.spec || {}).keep_top ?? attrs.keep_top;
  if (keepTop) {
    const used = attrs.checkpoint_bytes === undefined ? "–" : `${(attrs.checkpoint_bytes / 2 ** 20).toFixed(1)} MiB`;
    facts.push(["checkpoints", `${used} on disk, weights of the best ${keepTop} kept`]);
  }
  if (attrs.ended_early) facts.push(["ended early", attrs.ended_early]);
  const spec = attrs.spec || {};
  view.hasFront = (spec.objectives || []).length > 1 || (spec.constraints || []).length > 0;
  view.isPopulation = study.sweep_family === "population";
  document.getElementById("population-section").hidden = !view.isPopulation;
  if (view.hasFront) facts.push(["objectives", `${spec.objectives.join(", ")}${spec.constraints.length ? ` under ${spec.constraints.join(", ")}` : ""}`]);
  renderObjectiveChoice((spec.objectives || []).map((o) => o.split(":")[0]));
  document.getElementById("facts").replaceChildren(
    ...facts.map(([k, v]) => el("span", {}, el("b", {}, `${k}: `), String(v))));
  document.getElementById("download").disabled = !study.best_trial;
  renderWarmStart(study);
  renderWidened(study);
  if (view.widenTrials === undefined) {  // a finished study needs more trials to sample the wider range
    view.widenTrials = study.status === "finished" ? Math.max(1, Math.ceil(study.n_trials / 2)) : 0;
    document.getElementById("widen-trials").value = String(view.widenTrials);
  }
}

// A study with several objectives: the sensitivity view, importances and plot are of the one chosen.
function renderObjectiveChoice(names) {
  const choice = document.getElementById("objective-choice");
  choice.hidden = names.length < 2;
  const select = document.getElementById("objective");
  if (select.options.length !== names.length) {
    select.replaceChildren(...names.map((n) => el("option", { value: n }, n)));
    select.value = view.objective;
  }
}

// Warm start: the study whose trials the sampler takes as prior data, linked.
function renderWarmStart(study) {
  const line = document.getElementById("warm-start");
  const warm = study.warm_start;
  line.hidden = !warm;
  if (!warm) return;
  const links = warm.studies.map((s) => el("a", { href: `/web/studies/${encodeURIComponent(s)}` }, s));
  line.replaceChildren("warm-started from ", ...links.flatMap((a, i) => (i ? [", ", a] : [a])), ` (${warm.trials} trials)`);
}

// The history of widened ranges (POST /studies/{name}/widen, `rnntune sweep --widen`).
function renderWidened(study) {
  const rows = study.widened || [];
  document.getElementById("widened-section").hidden = rows.length === 0;
  document.getElementById("widened").replaceChildren(...rows.map((w) => el("li", { "data-param": w.param },
    `${w.param}: ${w.edge === "both" ? "both edges" : `${w.edge} edge`} widened from [${fmt(w.old[0])}, ${fmt(w.old[1])}] ` +
    `to [${fmt(w.new[0])}, ${fmt(w.new[1])}] after ${w.trials_before} trials (${w.at})`)));
}

function describeTrial(trial, line) {
  const params = Object.entries(trial.params).map(([k, v]) => `${k}=${fmt(v)}`).join("  ");
  const value = line.step === null
    ? `objective ${fmt(trial.value)}`
    : `PRUNED at step ${line.step} (value there ${fmt(line.value)})`;
  return `trial #${trial.number}  ${value}  ${params}${describeInitial(trial)}`;
}

// A population member's params are those in force at its end (after its copies, the shape copied
// included); Optuna's, first sampled for it, are shown only labelled as its initial settings.
function changedInitial(trial) {
  const initial = trial.initial_params || {};
  return Object.keys(initial).filter((k) => initial[k] !== trial.params[k]);
}

function describeInitial(trial) {
  const changed = changedInitial(trial);
  return changed.length
    ? `  (initial settings: ${changed.map((k) => `${k}=${fmt(trial.initial_params[k])}`).join("  ")})`
    : "";
}

function paramCell(trial, name) {
  const initial = (trial.initial_params || {})[name];
  const changed = trial.initial_params && name in trial.initial_params && initial !== trial.params[name];
  return el("td", changed ? { class: "num", title: `initial setting: ${fmt(initial)}`, "data-initial": String(initial) }
    : { class: "num" }, fmt(trial.params[name]));
}

function swatch(colour) {
  return el("span", { class: "swatch", style: `background:${colour}` });
}

async function renderPlot() {
  const plot = await rnntune.get(`${base}/plots/parallel-coordinates?fraction=${view.fraction}&include=${view.include}&objective=${view.objective}`);
  if (view.plot && view.plot.include !== view.include) document.getElementById("hover-info").textContent = "";
  view.plot = { ...plot, include: view.include };
  const div = document.getElementById("pc");
  await Plotly.react(div, plot.figure.data, plot.figure.layout, { responsive: true, displaylogo: false });
  if (!div.dataset.hooked) {
    div.dataset.hooked = "1";
    div.on("plotly_hover", async (event) => {
      const line = event && event.curveNumber;
      const shown = view.plot;
      if (line === undefined || line === null || !shown || shown.trial_numbers[line] === undefined) return;
      const values = div.data[0].dimensions[div.data[0].dimensions.length - 1].values;
      try {
        const trial = await rnntune.get(`${base}/trials/${shown.trial_numbers[line]}`);
        document.getElementById("hover-info").textContent =
          describeTrial(trial, { step: shown.steps[line], value: values[line] });
      } catch (err) { /* a trial that vanished: nothing to show */ }
    });
  }
  const pruned = plot.states.filter((s) => s === "PRUNED").length;
  const complete = plot.states.length - pruned;
  div.dataset.lines = String(plot.trial_numbers.length);
  div.dataset.pruned = String(pruned);
  const counts = [`${complete} completed`];
  if (view.include === "all") counts.push(`${pruned} pruned at the step where they were stopped`);
  document.getElementById("pc-counts").replaceChildren(
    `Lines: ${counts.join(", ")}.`,
    swatch("#d62728"), "the best and its neighbourhood",
    ...(view.include === "all" ? [swatch("#bdbdbd"), "pruned", swatch("#f4a3a3"), "pruned, near the best"] : []));
  window.rnntunePlotReady = true;
}

/** A fraction of a range as a percentage, to 0.1% (the neighbourhood's half-width is 0.005 steps). */
function percent(fraction) {
  return `${Math.round(1000 * fraction) / 10}%`;
}

async function renderSensitivity() {
  const s = await rnntune.get(`${base}/sensitivity?fraction=${view.fraction}&include=${view.include}&objective=${view.objective}`);
  const summary = s.summary;
  const others = s.n_completed - 1 + s.n_pruned;
  const kinds = s.include === "all" ? `${summary.count_complete} completed and ${summary.count_pruned} pruned` : `${summary.count}`;
  document.getElementById("nbhd").textContent =
    `${kinds} of ${others} other trials lie within ±${percent(s.fraction)} (a window of ${percent(2 * s.fraction)} in all) of every ` +
    `hyperparameter's range (log scale for log ones) of the best completed trial #${s.best.number} (objective ${fmt(s.best.value)})` +
    (summary.count_complete ? `; the completed ones are at most ${fmt(summary.max_delta)} worse (mean ${fmt(summary.mean_delta)})` : "") +
    (summary.pruned_mean_delta !== null
      ? `; the pruned ones differ from the best at the same step by ${summary.pruned_mean_delta > 0 ? "+" : ""}${fmt(summary.pruned_mean_delta)} on average (positive: worse)`
      : "") +
    ".";
}

function describeBasis(imp) {
  const f = imp.fidelity;
  const at = f.step === null ? "their final objective" : `step ${f.step}, which all of them reached`;
  const b = imp.bootstrap;
  return `${imp.n_trials} trials (${f.n_complete} completed, ${f.n_pruned} pruned) compared at ${at}; ` +
    `whiskers: ${Math.round(100 * b.confidence)}% bootstrap interval (${b.resamples} resamples of ${b.resample_size} trials, seed ${b.seed}).`;
}

async function renderImportances() {
  const imp = await rnntune.get(`${base}/importances?include=${view.include}&objective=${view.objective}`);
  const basis = document.getElementById("imp-basis");
  const note = document.getElementById("imp-note");
  const div = document.getElementById("importances");
  div.dataset.trials = String(imp.n_trials);
  div.dataset.step = imp.step === null ? "objective" : String(imp.step);
  if (imp.importances) {
    const rows = [...imp.importances].reverse();
    await Plotly.react(div, [{
      type: "bar", orientation: "h", y: rows.map((r) => r.name), x: rows.map((r) => r.importance),
      marker: { color: "#3b528b" },
      error_x: {
        type: "data", symmetric: false, color: "#222", thickness: 1.5, width: 6,
        array: rows.map((r) => r.ci_high - r.importance), arrayminus: rows.map((r) => r.importance - r.ci_low),
      },
      customdata: rows.map((r) => [r.ci_low, r.ci_high]),
      hovertemplate: "%{y}: %{x:.3f} (interval %{customdata[0]:.3f}–%{customdata[1]:.3f})<extra></extra>",
    }], { margin: { l: 160, r: 20, t: 10, b: 40 }, xaxis: { title: { text: "importance" }, rangemode: "tozero" } },
    { displaylogo: false, responsive: true });
    basis.textContent = describeBasis(imp);
    note.textContent = "";
  } else {
    Plotly.purge(div);
    basis.textContent = "";
    note.textContent = imp.note || "";
  }
  window.rnntuneImportancesReady = true;
}

async function renderCurves() {
  const best = await rnntune.get(`${base}/trials?state=COMPLETE&sort=objective&limit=5`);
  const trials = await Promise.all(best.items.map((t) => rnntune.get(`${base}/trials/${t.number}`)));
  const traces = trials.map((t) => ({
    type: "scatter", mode: "lines+markers", name: `#${t.number} (${fmt(t.value)})`,
    x: t.learning_curve.map((p) => p.step), y: t.learning_curve.map((p) => p.value),
  }));
  await Plotly.react("curves", traces, {
    margin: { l: 60, r: 20, t: 10, b: 80 }, xaxis: { title: { text: "step" } },
    yaxis: { title: { text: "validation loss (2TA)" } }, legend: { orientation: "h", y: -0.3 },
  }, { displaylogo: false, responsive: true });
}

async function renderTrials() {
  const state = document.getElementById("state-filter").value;
  const sort = document.getElementById("sort").value;
  const query = new URLSearchParams({ sort, offset: view.offset, limit: PAGE });
  if (state) query.set("state", state);
  const page = await rnntune.get(`${base}/trials?${query}`);
  const names = [...new Set(page.items.flatMap((t) => Object.keys(t.params)))];
  document.querySelector("#trials thead").replaceChildren(el("tr", {},
    ...["#", "state", "objective", ...names, "wall time (s)", "ms/step", "device", "node", "error"].map((h) => el("th", {}, h))));
  document.querySelector("#trials tbody").replaceChildren(...page.items.map((t) => el("tr", {},
    el("td", { class: "num" }, String(t.number)), el("td", {}, t.state), el("td", { class: "num" }, fmt(t.value)),
    ...names.map((n) => paramCell(t, n)),
    el("td", { class: "num" }, fmt(t.wall_time_s, 3)),
    el("td", { class: "num" }, t.seconds_per_step == null ? "–" : fmt(1000 * t.seconds_per_step, 3)),
    el("td", { title: "the training path: graphs, eager (after a fallback or by choice), cpu" },
      t.device ? (t.cuda_path_used && t.cuda_path_used !== "cpu" ? `${t.device} (${t.cuda_path_used})` : t.device) : "–"),
    el("td", {}, t.node ? String(t.node) : "–"),
    el("td", {}, t.error || t.problem || ""))));
  const last = Math.min(page.total, view.offset + PAGE);
  document.getElementById("page-info").textContent = page.total ? `${view.offset + 1}–${last} of ${page.total}` : "no trials";
  document.getElementById("prev").disabled = view.offset === 0;
  document.getElementById("next").disabled = last >= page.total;
}

// Range-boundary alerts: parameters whose best trials crowd an edge of their range.
async function renderAlerts() {
  const body = await rnntune.get(`${base}/boundaries`);
  const list = document.getElementById("alerts");
  list.replaceChildren(...body.alerts.map((a) => {
    const button = el("button", { class: "widen", title: `Widen ${a.param}'s range at its ${a.edge} edge by half its span, then start the sweep` }, "Widen and continue");
    button.addEventListener("click", () => widenAndContinue(a.param, a.edge, button));
    return el("li", { "data-param": a.param, "data-edge": a.edge }, a.message, " ", button);
  }));
  list.hidden = body.alerts.length === 0;
  document.getElementById("widen-controls").hidden = body.alerts.length === 0;
}

// Widen the crowded range through the API, then start the study's sweep on the wider range.
async function widenAndContinue(param, edge, button) {
  const note = document.getElementById("widen-note");
  button.disabled = true;
  try {
    const addTrials = Number(document.getElementById("widen-trials").value) || 0;
    const result = await rnntune.post(`${base}/widen`, { param, edge, add_trials: addTrials });
    const c = result.change;
    note.textContent = `${c.param} widened to [${fmt(c.new[0])}, ${fmt(c.new[1])}]; starting the sweep…`;
    await rnntune.post(`${base}/start`);
    note.textContent = `${c.param} widened to [${fmt(c.new[0])}, ${fmt(c.new[1])}]; sweep started (${result.n_trials} trials in all).`;
  } catch (err) {
    note.textContent = `widening ${param} failed: ${err.message}`;
  }
  button.disabled = false;
  view.compared = "";  // redraw the analysis on the next poll
  try {
    renderFacts(await rnntune.get(base));
    await renderAlerts();
  } catch (err) {
    showError(`could not reload study ${studyName}: ${err.message}`);
  }
}

// Finalisation: reruns of the best configurations with fresh seeds, mean ± sd beside the tuning run.
async function renderFinalize() {
  const report = await rnntune.get(`${base}/finalize`);
  const rows = report.configurations || [];
  document.getElementById("finalize-section").hidden = rows.length === 0;
  if (!rows.length) return;
  const winner = report.best_by_rerun_mean ? report.best_by_rerun_mean.trial : null;
  const pm = (mean, sd) => (sd === null || sd === undefined ? fmt(mean) : `${fmt(mean)} ± ${fmt(sd, 2)}`);
  document.querySelector("#finalize tbody").replaceChildren(...rows.map((r) => el("tr",
    { class: r.trial === winner ? "winner" : "", "data-trial": String(r.trial) },
    el("td", { class: "num" }, String(r.trial)), el("td", { class: "num" }, fmt(r.source_value)),
    el("td", { class: "num" }, `${r.n}${r.failed ? ` (+${r.failed} failed)` : ""}`),
    el("td", { class: "num" }, pm(r.val_loss_mean, r.val_loss_sd)), el("td", { class: "num" }, fmt(r.gap, 3)),
    el("td", { class: "num" }, `${pm(r.headline_mean, r.headline_sd)} ${r.headline}`))));
  const best = report.best ? `; the study's best is trial ${report.best.trial} (by ${report.best.by === "rerun_mean" ? "rerun mean" : "tuning run"})` : "";
  document.getElementById("finalize-note").textContent =
    `run ${report.state}; gap = rerun mean − tuning run (positive: the tuning run was lucky)${best}.`;
}

async function renderAnalysis() {
  try {
    document.getElementById("front-section").hidden = !view.hasFront;
    await Promise.all([renderPlot(), renderSensitivity(), renderImportances(), renderCurves(), renderAlerts(),
      ...(view.hasFront ? [front.render(base)] : [])]);
  } catch (err) {
    if (err.status !== 404) throw err;
    document.getElementById("nbhd").textContent = "No completed trial yet: the plot fills in as trials finish.";
  }
}

async function refresh() {
  let live = false;
  try {
    const study = await rnntune.get(base);
    live = rnntune.LIVE.has(study.status);
    renderFacts(study);
    await renderFinalize();
    const c = study.counts;
    const finished = c.COMPLETE + c.PRUNED + c.FAIL;
    const compared = `${c.COMPLETE}/${c.PRUNED}`;
    const redraw = compared !== view.compared;
    view.compared = compared;
    // A population's members train at once: their curves change while the sweep runs. Drawn
    // beside the analysis, so that one failing leaves the other drawn.
    await Promise.all([
      ...(redraw ? [renderAnalysis()] : []),
      ...(view.isPopulation && (redraw || live) ? [population.render(base)] : []),
    ]);
    if (finished !== view.finished || live) {
      view.finished = finished;
      await renderTrials();
    }
    showError("");
  } catch (err) {
    showError(`could not load study ${studyName}: ${err.message}`);
  }
  setTimeout(refresh, live ? 5000 : 30000);
}

async function download(path = "/best/checkpoint", fallback = `${studyName}-best.pt`) {
  const response = await fetch(`${base}${path}`, { headers: rnntune.headers() });
  if (!response.ok) {
    showError(`download failed: ${response.status} ${(await response.json()).detail}`);
    return;
  }
  const blob = await response.blob();
  const link = el("a", { href: URL.createObjectURL(blob) });
  const disposition = response.headers.get("content-disposition") || "";
  link.download = (disposition.match(/filename="?([^";]+)"?/) || [])[1] || fallback;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 10000);
}

document.getElementById("download").addEventListener("click", () => download());
document.getElementById("export-csv").addEventListener("click", () => download("/trials.csv", `${studyName}-trials.csv`));
document.getElementById("export-parquet").addEventListener("click", () => download("/trials.parquet", `${studyName}-trials.parquet`));
document.getElementById("fraction").addEventListener("change", (event) => {
  const value = Number(event.target.value);
  if (!(value >= 0.005 && value <= 1)) { showError("neighbourhood fraction must be in [0.005, 1]"); return; }
  view.fraction = value;
  document.getElementById("window-width").textContent = percent(2 * value);
  renderAnalysis().catch((err) => showError(err.message));
});
document.getElementById("objective").addEventListener("change", (event) => {
  view.objective = event.target.value;
  renderAnalysis().catch((err) => showError(err.message));
});
document.getElementById("complete-only").addEventListener("change", (event) => {
  view.include = event.target.checked ? "complete" : "all";
  renderAnalysis().catch((err) => showError(err.message));
});
for (const id of ["state-filter", "sort"]) {
  document.getElementById(id).addEventListener("change", () => { view.offset = 0; renderTrials().catch((e) => showError(e.message)); });
}
document.getElementById("prev").addEventListener("click", () => { view.offset = Math.max(0, view.offset - PAGE); renderTrials(); });
document.getElementById("next").addEventListener("click", () => { view.offset += PAGE; renderTrials(); });
refresh();
