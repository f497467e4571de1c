// A population-based-training study (GET /studies/{name}/population): every member's validation
// curve in one plot, a marker where a member copied another's checkpoint (hover: from which trial),
// the best member drawn thick; below, the best member's schedule, one step chart per setting (its
// weights' lineage, through the checkpoints copied) and the trainer config that replays it.
"use strict";

const population = (() => {
  const { el, fmt } = rnntune;
  const CONFIG = { responsive: true, displaylogo: false };

  function curve(member, best) {
    const failed = member.state === "FAIL";
    return {
      type: "scatter", mode: "lines", name: `#${member.number} ${member.state.toLowerCase()} ${fmt(member.value)}`,
      x: member.curve.map((p) => p[0]), y: member.curve.map((p) => p[1]),
      line: { width: member.number === best ? 4 : 1.5, dash: failed ? "dot" : "solid" },
      hovertemplate: `trial #${member.number}<br>step %{x}<br>val loss %{y}<extra></extra>`,
    };
  }

  // One marker per copy, on the member's curve at the copy's step (else at the copied loss).
  function copies(members) {
    const points = members.flatMap((m) => m.history.filter((s) => s.from_trial !== null).map((s) => {
      const at = m.curve.find((p) => p[0] === s.step);
      return {
        x: s.step, y: at && at[1] !== null ? at[1] : s.from_value,
        text: `trial #${m.number} copied trial #${s.from_trial} at step ${s.step}` +
          ` (its loss ${fmt(s.from_value)}) and went on with ${settings(s.settings)}`,
      };
    }));
    return {
      type: "scatter", mode: "markers", name: "copied another member",
      x: points.map((p) => p.x), y: points.map((p) => p.y), text: points.map((p) => p.text),
      marker: { symbol: "triangle-down", size: 10, color: "#d62728" }, hovertemplate: "%{text}<extra></extra>",
    };
  }

  function settings(values) {
    return Object.entries(values).map(([k, v]) => `${k}=${fmt(v)}`).join(", ");
  }

  // One step chart per setting: its value from each lineage step on, to the best member's last step.
  async function renderSchedule(best, members) {
    const holder = document.getElementById("population-schedule");
    if (!best) return holder.replaceChildren();
    const own = members.find((m) => m.number === best.number);
    const last = own && own.curve.length ? own.curve[own.curve.length - 1][0] : best.lineage[best.lineage.length - 1].step;
    const names = [...new Set(best.lineage.flatMap((e) => Object.keys(e.settings)))].sort();
    // Every chart's box first, so that each is drawn at its width in the row.
    const divs = names.map((name) => el("div", { class: "schedule-chart", "data-setting": name }));
    holder.replaceChildren(...divs);
    await Promise.all(names.map((name, i) => {
      const steps = best.lineage.filter((e) => name in e.settings);
      const x = [...steps.map((e) => e.step), last];
      const y = [...steps.map((e) => e.settings[name]), steps[steps.length - 1].settings[name]];
      const text = [...steps.map((e) => `trained by #${e.trial}`), `trained by #${best.number}`];
      return Plotly.react(divs[i], [{
        type: "scatter", mode: "lines+markers", x, y, text, line: { shape: "hv" },
        hovertemplate: `${name} %{y} from step %{x}<br>%{text}<extra></extra>`,
      }], {
        margin: { l: 60, r: 10, t: 28, b: 44 }, title: { text: name, font: { size: 13 } },
        xaxis: { title: { text: "step" } }, yaxis: { type: name === "learning_rate" ? "log" : "linear" },
      }, CONFIG);
    }));
  }

  async function render(base) {
    const body = await rnntune.get(`${base}/population`);
    const best = body.best ? body.best.number : null;
    const div = document.getElementById("population");
    const data = [...body.members.map((m) => curve(m, best)), copies(body.members)];
    await Plotly.react(div, data, {
      margin: { t: 10 }, xaxis: { title: { text: "step" } }, yaxis: { title: { text: "validation loss (2TA)" } },
      legend: { orientation: "h", y: -0.2 },
    }, CONFIG);
    div.dataset.members = body.members.map((m) => m.number).join(",");
    div.dataset.copies = String(data[data.length - 1].x.length);
    await renderSchedule(body.best, body.members);
    const interval = body.perturbation_interval === null ? "the default interval" : `every ${body.perturbation_interval} steps`;
    document.getElementById("population-note").textContent =
      `${body.scheduler}: ${body.members.length} members (retries included), perturbed at ${interval}; ` +
      (body.best ? `the best member is trial #${body.best.number} (${fmt(body.best.value)}), its schedule below.` : "no member has completed yet.");
    const replay = document.getElementById("population-replay");
    replay.hidden = !(body.best && body.best.config);
    if (!replay.hidden) {
      replay.querySelector("pre").textContent = JSON.stringify(body.best.config, null, 2);
    }
    window.rnntunePopulationReady = true;
  }

  return { render };
})();
