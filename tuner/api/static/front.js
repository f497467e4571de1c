// The Pareto front of a study with several objectives or constraints (GET /studies/{name}/pareto):
// the validation loss against the second objective (or the first bounded measure); the front's
// trials red and joined, dominated feasible ones blue, infeasible ones grey crosses. A click opens
// the trial: its objectives and settings below the plot, with a link to its record.
"use strict";

const front = (() => {
  const { el, fmt } = rnntune;

  function axes(body) {
    const y = body.objectives[0].name;
    const x = body.objectives.length > 1 ? body.objectives[1].name : (body.constraints[0] || "").split(/[<>]/)[0];
    return { x, y };
  }

  function trace(points, x, y, name, style) {
    return {
      type: "scatter", mode: style.mode || "markers", name,
      x: points.map((p) => p.values[x] ?? p.measures[x]), y: points.map((p) => p.values[y]),
      customdata: points.map((p) => p.number), marker: style.marker, line: style.line,
      hovertemplate: `trial #%{customdata}<br>${x} %{x}<br>${y} %{y}<extra>${name}</extra>`,
    };
  }

  async function open(base, number) {
    const trial = await rnntune.get(`${base}/trials/${number}`);
    const params = Object.entries(trial.params).map(([k, v]) => `${k}=${fmt(v)}`).join("  ");
    const link = el("a", { href: `${base}/trials/${number}`, target: "_blank" }, `trial #${number}`);
    const info = document.getElementById("front-info");
    info.replaceChildren(link, `  objective ${fmt(trial.value)}  ${params}`);
    document.getElementById("front").dataset.opened = String(number);
  }

  async function render(base) {
    const body = await rnntune.get(`${base}/pareto`);
    const { x, y } = axes(body);
    const onFront = body.trials.filter((p) => p.on_front).sort((a, b) => (a.values[x] ?? a.measures[x]) - (b.values[x] ?? b.measures[x]));
    const dominated = body.trials.filter((p) => p.feasible && !p.on_front);
    const infeasible = body.trials.filter((p) => !p.feasible);
    const data = [
      trace(onFront, x, y, "front", { mode: "lines+markers", marker: { color: "#d62728", size: 9 }, line: { color: "#d62728", shape: "hv" } }),
      trace(dominated, x, y, "dominated", { marker: { color: "#1f77b4", size: 7 } }),
      trace(infeasible, x, y, "infeasible", { marker: { color: "#9e9e9e", size: 7, symbol: "x" } }),
    ];
    const layout = { margin: { t: 10 }, xaxis: { title: { text: x } }, yaxis: { title: { text: y } }, legend: { orientation: "h" } };
    const div = document.getElementById("front");
    await Plotly.react(div, data, layout, { responsive: true, displaylogo: false });
    if (!div.dataset.hooked) {
      div.dataset.hooked = "1";
      div.on("plotly_click", (event) => {
        const point = event && event.points && event.points[0];
        if (point) open(base, point.customdata).catch(() => {});
      });
    }
    div.dataset.front = body.front.join(",");
    div.dataset.infeasible = infeasible.map((p) => p.number).join(",");
    document.getElementById("front-note").textContent =
      `${body.front.length} trials on the front of ${body.objectives.map((o) => `${o.name} (${o.direction})`).join(", ")}` +
      (body.constraints.length ? ` under ${body.constraints.join(", ")}` : "") +
      `; ${dominated.length} dominated, ${infeasible.length} infeasible. Click a point to open its trial.`;
    window.rnntuneFrontReady = true;
  }

  return { render };
})();
