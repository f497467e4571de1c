// The study page: facts, the Appendix 2.B parallel-coordinates plot (brushing and hover), importances,
// learning curves of the best trials, the trial table and the best-checkpoint download. While the
// sweep runs it polls the study every 5 s and redraws what changed.
"use strict";

const studyName = decodeURIComponent(location.pathname.split("/").pop());
const base = `/studies/${encodeURIComponent(studyName)}`;
const PAGE = 50;
const view = { offset: 0, completed: -1, finished: -1, plotTrials: [], fraction: 0.15 };
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
  document.getElementById("facts").replaceChildren(
    ...facts.map(([k, v]) => el("span", {}, el("b", {}, `${k}: `), String(v))));
  document.getElementById("download").disabled = !study.best_trial;
}

function describeTrial(trial) {
  const params = Object.entries(trial.params).map(([k, v]) => `${k}=${fmt(v)}`).join("  ");
  return `trial #${trial.number}  objective ${fmt(trial.value)}  ${params}`;
}

async function renderPlot() {
  const plot = await rnntune.get(`${base}/plots/parallel-coordinates?fraction=${view.fraction}`);
  view.plotTrials = plot.trial_numbers;
  const div = document.getElementById("pc");
  await Plotly.react(div, plot.figure.data, plot.figure.layout, { responsive: true, displaylogo: false });
  if (!div.dataset.hooked) {
    div.dataset.hooked = "1";
    div.on("plotly_hover", async (event) => {
      const line = event && event.curveNumber;
      if (line === undefined || line === null || view.plotTrials[line] === undefined) return;
      const number = view.plotTrials[line];
      try {
        const trial = await rnntune.get(`${base}/trials/${number}`);
        document.getElementById("hover-info").textContent = describeTrial(trial);
      } catch (err) { /* a trial that vanished: nothing to show */ }
    });
  }
  div.dataset.lines = String(plot.trial_numbers.length);
  window.rnntunePlotReady = true;
}

async function renderSensitivity() {
  const s = await rnntune.get(`${base}/sensitivity?fraction=${view.fraction}`);
  const summary = s.summary;
  document.getElementById("nbhd").textContent =
    `${summary.count} of ${s.n_completed - 1} other completed trials lie within ±${Math.round(100 * s.fraction)}% of every ` +
    `hyperparameter's range (log scale for log ones) of the best trial #${s.best.number} (objective ${fmt(s.best.value)})` +
    (summary.count ? `; their objectives are at most ${fmt(summary.max_delta)} worse (mean ${fmt(summary.mean_delta)}).` : ".");
  const note = document.getElementById("imp-note");
  if (s.importances) {
    const names = Object.keys(s.importances).reverse();
    await Plotly.react("importances", [{
      type: "bar", orientation: "h", y: names, x: names.map((n) => s.importances[n]), marker: { color: "#3b528b" },
    }], { margin: { l: 160, r: 20, t: 10, b: 30 }, xaxis: { title: { text: "importance" } } }, { displaylogo: false, responsive: true });
    note.textContent = "";
  } else {
    Plotly.purge("importances");
    note.textContent = s.importance_note || "";
  }
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
    ...["#", "state", "objective", ...names, "wall time (s)", "node", "error"].map((h) => el("th", {}, h))));
  document.querySelector("#trials tbody").replaceChildren(...page.items.map((t) => el("tr", {},
    el("td", { class: "num" }, String(t.number)), el("td", {}, t.state), el("td", { class: "num" }, fmt(t.value)),
    ...names.map((n) => el("td", { class: "num" }, fmt(t.params[n]))),
    el("td", { class: "num" }, fmt(t.wall_time_s, 3)), el("td", {}, t.node ? String(t.node) : "–"),
    el("td", {}, t.error || ""))));
  const last = Math.min(page.total, view.offset + PAGE);
  document.getElementById("page-info").textContent = page.total ? `${view.offset + 1}–${last} of ${page.total}` : "no trials";
  document.getElementById("prev").disabled = view.offset === 0;
  document.getElementById("next").disabled = last >= page.total;
}

async function renderAnalysis() {
  try {
    await Promise.all([renderPlot(), renderSensitivity(), renderCurves()]);
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
    const c = study.counts;
    const finished = c.COMPLETE + c.PRUNED + c.FAIL;
    if (c.COMPLETE !== view.completed) {
      view.completed = c.COMPLETE;
      await renderAnalysis();
    }
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

async function download() {
  const response = await fetch(`${base}/best/checkpoint`, { headers: rnntune.headers() });
  if (!response.ok) {
    showError(`download failed: ${response.status} ${(await response.json()).detail}`);
    return;
  }
  const blob = await response.blob();
  const link = el("a", { href: URL.createObjectURL(blob) });
  const disposition = response.headers.get("content-disposition") || "";
  link.download = (disposition.match(/filename="?([^";]+)"?/) || [])[1] || `${studyName}-best.pt`;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 10000);
}

document.getElementById("download").addEventListener("click", download);
document.getElementById("fraction").addEventListener("change", (event) => {
  const value = Number(event.target.value);
  if (!(value > 0 && value <= 1)) { showError("neighbourhood fraction must be in (0, 1]"); return; }
  view.fraction = value;
  renderAnalysis().catch((err) => showError(err.message));
});
for (const id of ["state-filter", "sort"]) {
  document.getElementById(id).addEventListener("change", () => { view.offset = 0; renderTrials().catch((e) => showError(e.message)); });
}
document.getElementById("prev").addEventListener("click", () => { view.offset = Math.max(0, view.offset - PAGE); renderTrials(); });
document.getElementById("next").addEventListener("click", () => { view.offset += PAGE; renderTrials(); });
refresh();
