// Shared helpers of the web view: API calls (with the bearer token if one was given as
// `#token=...` in the URL, kept for the browser tab only) and number formatting.
"use strict";

const rnntune = (() => {
  const fromHash = new URLSearchParams(location.hash.slice(1)).get("token");
  if (fromHash) {
    sessionStorage.setItem("rnntune-token", fromHash);
    history.replaceState(null, "", location.pathname + location.search);
  }
  const token = () => sessionStorage.getItem("rnntune-token");

  function headers() {
    const t = token();
    return t ? { Authorization: "Bearer " + t } : {};
  }

  async function get(path) {
    return answer(await fetch(path, { headers: headers() }));
  }

  // A JSON POST (the mutations: widen a range, start a sweep); the token as for reads.
  async function post(path, body = {}) {
    return answer(await fetch(path, {
      method: "POST", headers: { ...headers(), "Content-Type": "application/json" }, body: JSON.stringify(body),
    }));
  }

  async function answer(response) {
    if (!response.ok) {
      let detail = response.statusText;
      try { detail = (await response.json()).detail; } catch (e) { /* not JSON */ }
      const err = new Error(`${response.status}: ${detail}`);
      err.status = response.status;
      throw err;
    }
    return response.json();
  }

  function fmt(value, digits = 4) {
    if (value === null || value === undefined) return "–";
    if (typeof value === "number") {
      if (Number.isInteger(value)) return String(value);
      const abs = Math.abs(value);
      return abs !== 0 && (abs < 1e-3 || abs >= 1e5) ? value.toExponential(2) : value.toPrecision(digits);
    }
    return String(value);
  }

  function el(tag, attrs = {}, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs)) {
      if (key === "class") node.className = value; else node.setAttribute(key, value);
    }
    for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(child));
    return node;
  }

  const LIVE = new Set(["running", "stopping"]);
  return { get, post, headers, token, fmt, el, LIVE };
})();
