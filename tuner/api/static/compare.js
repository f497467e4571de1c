// The comparison page: pick studies of one task, then GET /compare draws each study's expected best
// validation loss against trials, training steps or trial seconds with its bootstrap band, lists
// the verdict per pair and each study's finalised reruns (or offers to run them). The studies are
// kept in the address (/web/compare?studies=A,B) so a comparison can be linked.
"use strict";

const { el, fmt } = rnntune;
const COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"];
const AXES = { n: "trials", steps: "training steps", seconds: "trial seconds" };
const view = { result: null };

function chosen() {
  const raw = new URLSearchParams(location.search).get("studies") || "";
  return raw.split(",").map((s) => s.trim()).filter(Boolean);
}

async function renderPicker() {
  const names = [];
  for (let offset = 0; ; offset += 500) {
    const page = await rnntune.get(`/studies?offset=${offset}&limit=500`);
    names.push(...page.items.map((s) => s.name));
    if (names.length >= page.total || page.items.length === 0) break;
  }
  const picked = new Set(chosen());
  document.getElementById("picker").replaceChildren(...names.map((name) => el("label", { "data-study": name },
    Object.assign(el("input", { type: "checkbox", value: name }), { checked: picked.has(name) }), ` ${name} `)));
}

function onCompare() {
  const names = [...document.querySelectorAll("#picker input:checked")].map((i) => i.value);
  history.replaceState(null, "", `/web/compare?studies=${names.map(encodeURIComponent).join(",")}`);
  load();
}

function renderVerdicts(result) {
  document.getElementById("verdicts").replaceChildren(...result.verdicts.map((v) => {
    const item = el("li", { "data-state": v.state, "data-pair": `${v.a},${v.b}` }, el("b", {}, v.text));
    if (v.steps) {
      const s = v.steps;
      const said = s.separable ? `${s.better} better by ${fmt(s.by)} ± ${fmt(s.se, 2)}` : "not separable";
      item.append(el("br"), `at equal training steps (${s.steps}: ${s.n_a} vs ${s.n_b} trials): ${said}`);
    }
    return item;
  }));
  document.getElementById("test").textContent = `Test: ${result.test}`;
  const task = Object.entries(result.task).filter(([, v]) => v !== null).map(([k, v]) => `${k}=${v}`);
  document.getElementById("task").textContent = `Shared task: ${task.join(", ")}`;
}

async function renderCurves() {
  const result = view.result;
  const axis = document.getElementById("axis").value;
  const traces = [];
  result.studies.forEach((s, i) => {
    const c = s.curve;
    if (!c || !c[axis]) return;
    const colour = COLOURS[i % COLOURS.length];
    traces.push({
      x: [...c[axis], ...[...c[axis]].reverse()], y: [...c.high, ...[...c.low].reverse()],
      fill: "toself", fillcolor: colour, opacity: 0.18, line: { width: 0 }, hoverinfo: "skip",
      name: `${s.name} band`, showlegend: false, type: "scatter", mode: "lines",
    }, {
      x: c[axis], y: c.expected, name: `${s.name} (${s.model})`, type: "scatter", mode: "lines",
      line: { color: colour, width: 2 }, customdata: c.n,
      hovertemplate: `${s.name}: %{y:.4f} at %{x:.4g} ${AXES[axis]} (n=%{customdata})<extra></extra>`,
    });
  });
  await Plotly.react("evp", traces, {
    margin: { l: 70, r: 20, t: 10, b: 60 },
    xaxis: { title: { text: AXES[axis] }, type: "log" },
    yaxis: { title: { text: `expected best validation loss${result.direction === "maximize" ? " (max)" : ""}` } },
    legend: { orientation: "h", y: -0.2 },
  }, { displaylogo: false, responsive: true });
  const b = result.bootstrap;
  document.getElementById("curve-note").textContent =
    `Bands: ${Math.round(100 * b.band)}% bootstrap bands over ${b.replicates} resamples of the COMPLETE trials ` +
    `(close to their stated coverage up to about a tenth of a study's trials, less towards all of them). ` +
    `Steps and seconds: n trials times the study's compute per COMPLETE trial, pruned and failed trials included.`;
  document.getElementById("evp").dataset.axis = axis;
}

function rerunCell(s) {
  const f = s.finalize;
  if (f.best) {
    const sd = f.best.val_loss_sd === null ? "" : ` ± ${f.best.val_loss_sd.toFixed(3)}`;
    return el("td", { class: "reruns" }, `${f.best.val_loss_mean.toFixed(3)}${sd} (trial #${f.best.trial}, n=${f.best.n}, ` +
      `tuning run ${fmt(f.best.source_value)})`);
  }
  const button = el("button", { class: "finalize", "data-study": s.name }, "Run finalize");
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      await rnntune.post(f.run.path, f.run.body);
      button.replaceWith(`finalize started (top ${f.run.body.top}, ${f.run.body.seeds} seeds); reload to see reruns`);
    } catch (err) {
      button.disabled = false;
      document.getElementById("error").textContent = `could not start finalize for ${s.name}: ${err.message}`;
    }
  });
  const state = f.state === "none" ? "not finalised" : `finalize ${f.state}, no rerun finished`;
  return el("td", { class: "reruns" }, `${state}: `, el("code", {}, f.run.command), " or ", button);
}

function renderTable(result) {
  const n = Math.min(...result.verdicts.map((v) => v.n ?? Infinity));
  document.getElementById("at-n").textContent =
    Number.isFinite(n) ? `E[best of ${n}] [${Math.round(100 * result.bootstrap.band)}% band]` : "E[best]";
  document.querySelector("#compared tbody").replaceChildren(...result.studies.map((s) => {
    const c = s.curve;
    const i = c && Number.isFinite(n) ? c.n.indexOf(n) : -1;
    const atN = i < 0 ? "–" : `${c.expected[i].toFixed(4)} [${c.low[i].toFixed(4)}, ${c.high[i].toFixed(4)}]`;
    return el("tr", { "data-study": s.name },
      el("td", {}, el("a", { href: `/web/studies/${encodeURIComponent(s.name)}` }, s.name)),
      el("td", {}, s.model), el("td", { class: "num" }, fmt(s.n_complete)),
      el("td", { class: "num" }, fmt(s.counts.PRUNED || 0)), el("td", { class: "num" }, fmt(s.best_value)),
      el("td", { class: "num" }, atN),
      el("td", { class: "num" }, s.steps_per_complete === null ? "–" : s.steps_per_complete.toFixed(0)),
      el("td", { class: "num" }, s.seconds_per_complete === null ? "–" : s.seconds_per_complete.toFixed(1)),
      rerunCell(s));
  }));
}

async function load() {
  const names = chosen();
  const error = document.getElementById("error");
  error.textContent = "";
  for (const id of ["verdict-section", "curve-section", "table-section"]) document.getElementById(id).hidden = true;
  if (names.length < 2) {
    error.textContent = names.length ? "pick at least two studies" : "";
    window.rnntuneCompareReady = true;
    return;
  }
  try {
    view.result = await rnntune.get(`/compare?studies=${names.map(encodeURIComponent).join(",")}`);
  } catch (err) {
    error.textContent = `cannot compare: ${err.message}`;
    window.rnntuneCompareReady = true;
    return;
  }
  for (const id of ["verdict-section", "curve-section", "table-section"]) document.getElementById(id).hidden = false;
  renderVerdicts(view.result);
  renderTable(view.result);
  await renderCurves();
  window.rnntuneCompareReady = true;
}

document.getElementById("compare").addEventListener("click", onCompare);
document.getElementById("axis").addEventListener("change", () => view.result && renderCurves());
renderPicker().catch((err) => { document.getElementById("error").textContent = `could not list studies: ${err.message}`; });
load();
