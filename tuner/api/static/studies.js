// The studies list: status, progress and best objective of every study; refreshes every 5 s
// while any study is running.
"use strict";

async function loadStudies() {
  const { el, fmt } = rnntune;
  const items = [];
  for (let offset = 0; ; offset += 500) {
    const page = await rnntune.get(`/studies?offset=${offset}&limit=500`);
    items.push(...page.items);
    if (items.length >= page.total || page.items.length === 0) break;
  }
  const body = document.querySelector("#studies tbody");
  body.replaceChildren(...items.map((s) => el("tr", { "data-study": s.name },
    el("td", {}, el("a", { href: `/web/studies/${encodeURIComponent(s.name)}` }, s.name)),
    el("td", {}, el("span", { class: `status ${s.status}` }, s.status)),
    el("td", {}, s.space || "–"),
    el("td", {}, s.sampler || "–"),
    el("td", { class: "num" }, s.progress === null ? "–" : `${Math.round(100 * s.progress)}%`),
    el("td", { class: "num" }, fmt(s.counts.COMPLETE)),
    el("td", { class: "num" }, fmt(s.counts.PRUNED)),
    el("td", { class: "num" }, fmt(s.counts.FAIL)),
    el("td", { class: "num" }, fmt(s.counts.RUNNING)),
    el("td", { class: "num" }, fmt(s.best_value)),
    el("td", {}, s.created_at || "–"),
  )));
  return items.some((s) => rnntune.LIVE.has(s.status));
}

async function refresh() {
  let live = false;
  try {
    live = await loadStudies();
    document.getElementById("error").textContent = "";
  } catch (err) {
    document.getElementById("error").textContent = `could not load studies: ${err.message}`;
  }
  setTimeout(refresh, live ? 5000 : 15000);
}

refresh();
