// flytelite console: live regions, actions over the REST API, the log viewer and the launch form.
// Plain browser JavaScript: no framework, no build step, nothing fetched from elsewhere.
(function () {
  "use strict";
  var POLL_MS = 1500;

  function content() { return document.getElementById("content"); }
  function polling() {
    var c = content();
    return c && (c.dataset.running === "1" || c.dataset.poll === "1");
  }

  // ---- the node list's tree: a node's children shown or hidden, kept across refreshes ----
  var opened = {};  // node id -> true/false, as the viewer left it

  function applyTree() {
    var open = {};
    document.querySelectorAll("tr[data-open]").forEach(function (row) {
      var id = row.dataset.nodeRow;
      open[id] = id in opened ? opened[id] : row.dataset.open === "1";
      var toggle = row.querySelector("button[data-toggle]");
      if (toggle) toggle.textContent = toggle.textContent.replace(/^(show|hide)/, open[id] ? "hide" : "show");
    });
    document.querySelectorAll("tr[data-ancestors]").forEach(function (row) {
      row.hidden = !row.dataset.ancestors.split(" ").every(function (id) { return open[id] !== false; });
    });
  }

  // ---- the node panel: a graph's node, as its row in the node list tells of it ----
  var panelFor = null;  // [parent node id, spec node id] of the node the panel shows
  var graphsShown = {};  // node id -> true for the subworkflow and dynamic graphs shown

  function rowOf(parent, spec) {
    var rows = Array.prototype.filter.call(document.querySelectorAll("tr[data-node-row]"), function (r) {
      return r.dataset.parent === parent && r.dataset.spec === spec;
    });
    return rows.length ? rows[rows.length - 1] : null;  // the latest retry's
  }

  function openNode(parent, spec) {
    var panel = document.getElementById("node-panel");
    if (!panel) return;
    panelFor = [parent, spec];
    var row = rowOf(parent, spec);
    var body = panel.querySelector(".node-body");
    document.getElementById("node-title").textContent = spec;
    if (!row) {
      body.innerHTML = "<p class='muted'>This node has not started.</p>";
    } else {
      var heads = ["Node", "Phase", "Started", "Duration", "Attempts", "Data"];
      var html = "<table class='meta'>";
      row.querySelectorAll(":scope > td").forEach(function (td, i) {
        html += "<tr><td>" + heads[i] + "</td><td>" + td.innerHTML + "</td></tr>";
      });
      html += "</table>";
      var id = row.dataset.nodeRow;
      if (document.querySelector(".subdag[data-graph-of='" + CSS.escape(id) + "']")) {
        html += "<p><button data-show-graph='" + id.replace(/[^\w.-]/g, "") + "'>" +
          (graphsShown[id] ? "Hide" : "Show") + " its graph</button></p>";
      }
      body.innerHTML = html;
      body.querySelectorAll("details").forEach(function (d) { d.removeAttribute("id"); d.open = true; });
      body.querySelectorAll("button[data-toggle]").forEach(function (b) { b.remove(); });
    }
    panel.classList.add("open");
  }

  function applyGraphs() {
    document.querySelectorAll(".subdag[data-graph-of]").forEach(function (g) {
      g.hidden = !graphsShown[g.dataset.graphOf];
    });
  }

  // ---- times: in UTC as the server writes them, or in the browser's zone (kept in localStorage) ----
  function localZone() { try { return localStorage.getItem("flytelite-zone") === "local"; } catch (e) { return false; } }

  function pad(n) { return (n < 10 ? "0" : "") + n; }

  function applyZone() {
    var local = localZone();
    document.querySelectorAll("time[datetime]").forEach(function (t) {
      if (!t.dataset.utc) t.dataset.utc = t.textContent;
      if (!local) { t.textContent = t.dataset.utc; return; }
      var d = new Date(t.getAttribute("datetime"));
      var zone = (d.toLocaleTimeString([], {timeZoneName: "short"}).split(" ").pop()) || "local";
      t.textContent = d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " +
        pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds()) + " " + zone;
    });
    var button = document.querySelector("button[data-zone]");
    if (button) button.textContent = local ? "Local time" : "UTC";
  }
  applyZone();

  // ---- live regions: re-fetch the page and swap every [data-live] region nobody is typing in ----
  document.addEventListener("input", function (e) {
    var region = e.target.closest("[data-live]");
    if (region) region.dataset.dirty = "1";
  });

  async function refresh() {
    try {
      var r = await fetch(location.href, {cache: "no-store"});
      if (r.ok) {
        var fresh = new DOMParser().parseFromString(await r.text(), "text/html");
        var open = {};
        document.querySelectorAll("details[id]").forEach(function (d) { open[d.id] = d.open; });
        fresh.querySelectorAll("[data-live][id]").forEach(function (next) {
          var cur = document.getElementById(next.id);
          if (!cur || cur.dataset.dirty === "1" || cur.contains(document.activeElement)) return;
          next.querySelectorAll("details[id]").forEach(function (d) { if (d.id in open) d.open = open[d.id]; });
          cur.replaceWith(next);
        });
        applyTree();
        applyGraphs();
        applyZone();
        if (panelFor && document.getElementById("node-panel").classList.contains("open")) openNode(panelFor[0], panelFor[1]);
        var fc = fresh.getElementById("content");
        if (fc && content()) content().dataset.running = fc.dataset.running;
        document.title = fresh.title;
      }
    } catch (err) { /* the server may be restarting: try again next tick */ }
    if (polling()) setTimeout(refresh, POLL_MS);
  }
  if (polling()) setTimeout(refresh, POLL_MS);

  // ---- REST calls ----
  async function api(method, path, body) {
    var r = await fetch(path, {
      method: method,
      headers: {"Content-Type": "application/json", "Accept": "application/json"},
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    var data = {};
    try { data = await r.json(); } catch (e) { /* empty body */ }
    if (!r.ok) throw new Error(data.error || data.message || (r.status + " " + r.statusText));
    return data;
  }

  function show(el, text, ok) {
    if (!el) { if (!ok) alert(text); return; }
    el.textContent = text;
    el.className = el.className.replace(/ ?notice( ok| bad)?/g, "") + " notice " + (ok ? "ok" : "bad");
  }

  function execId() {
    var c = content();
    return c && c.dataset.execution ? JSON.parse(c.dataset.execution) : null;
  }

  function goTo(id) {
    location.href = "/console/projects/" + encodeURIComponent(id.project) + "/domains/" +
      encodeURIComponent(id.domain) + "/executions/" + encodeURIComponent(id.name);
  }

  async function setState(id, state, said) {
    await api("PUT", "/api/v1/executions/" + [id.project, id.domain, id.name].map(encodeURIComponent).join("/"),
      {id: id, state: state});
    location.reload();
    return said;
  }

  var actions = {
    terminate: async function (id, btn) {
      // Asks first: the cause typed is the execution's abort cause.
      var form = document.querySelector("form.terminate");
      form.hidden = false;
      var region = form.closest("[data-live]");
      if (region) region.dataset.dirty = "1";
      form.elements.cause.focus();
      btn.disabled = false;
      return "";
    },
    "abort-run": async function () {
      var run = JSON.parse(content().dataset.run);
      await api("POST", "/flyteidl2.workflow.RunService/AbortRun", {runId: run, reason: "aborted from the console"});
      setTimeout(refresh, 200);
      return "Aborting…";
    },
    archive: async function (id) { return await setState(id, "EXECUTION_ARCHIVED", "Archived"); },
    unarchive: async function (id) { return await setState(id, "EXECUTION_ACTIVE", "Unarchived"); },
    recover: async function (id) {
      var r = await api("POST", "/api/v1/executions/recover", {id: id});
      goTo(r.id);
      return "Recovering as " + r.id.name;
    },
  };

  document.addEventListener("click", async function (e) {
    var btn = e.target.closest("button[data-action]");
    if (btn && actions[btn.dataset.action]) {
      e.preventDefault();
      btn.disabled = true;
      var out = btn.parentElement.querySelector(".action-result");
      try {
        var said = await actions[btn.dataset.action](execId(), btn);
        if (said) show(out, said, true);
      }
      catch (err) { show(out, err.message, false); btn.disabled = false; }
      return;
    }
    var approve = e.target.closest("button[data-signal-approve]");
    if (approve) {
      e.preventDefault();
      var row = approve.closest("[data-signal]");
      var id = execId();
      approve.disabled = true;
      try {
        await api("POST", "/api/v1/signals", {
          id: {execution_id: id, signal_id: row.dataset.signal},
          value: {scalar: {primitive: {boolean: approve.dataset.signalApprove === "true"}}},
        });
        show(row.querySelector(".signal-result"), approve.dataset.signalApprove === "true" ? "Approved" : "Rejected", true);
        setTimeout(refresh, 200);
      } catch (err) { show(row.querySelector(".signal-result"), err.message, false); approve.disabled = false; }
      return;
    }
    var lpState = e.target.closest("button[data-lp-state]");
    if (lpState) {
      e.preventDefault();
      var lp = JSON.parse(lpState.dataset.lp);
      try {
        await api("PUT", "/api/v1/launch_plans/" + [lp.project, lp.domain, lp.name, lp.version].map(encodeURIComponent).join("/"),
          {id: Object.assign({resource_type: "LAUNCH_PLAN"}, lp), state: lpState.dataset.lpState});
        location.reload();
      } catch (err) { show(document.querySelector(".lp-result"), err.message, false); }
      return;
    }
    if (e.target.closest("button[data-cancel-terminate]")) {
      var asked = e.target.closest("form.terminate");
      asked.hidden = true;
      var frozen = asked.closest("[data-live]");
      if (frozen) delete frozen.dataset.dirty;
      return;
    }
    if (e.target.closest("button[data-zone]")) {
      try { localStorage.setItem("flytelite-zone", localZone() ? "utc" : "local"); } catch (err) { /* private mode */ }
      applyZone();
      return;
    }
    var box = e.target.closest("g.dag-node[data-node]");
    if (box && !/^(start|end)-node$/.test(box.dataset.node)) {
      var graph = box.closest(".subdag[data-graph-of]");
      openNode(graph ? graph.dataset.graphOf : "", box.dataset.node);
      return;
    }
    var showGraph = e.target.closest("button[data-show-graph]");
    if (showGraph) {
      var of = showGraph.dataset.showGraph;
      graphsShown[of] = !graphsShown[of];
      applyGraphs();
      showGraph.textContent = (graphsShown[of] ? "Hide" : "Show") + " its graph";
      var drawn = document.querySelector(".subdag[data-graph-of='" + CSS.escape(of) + "']");
      if (drawn && graphsShown[of]) drawn.scrollIntoView({block: "nearest"});
      return;
    }
    if (e.target.id === "node-close") {
      document.getElementById("node-panel").classList.remove("open");
      panelFor = null;
      return;
    }
    var toggle = e.target.closest("button[data-toggle]");
    if (toggle) {
      e.preventDefault();
      var row = toggle.closest("tr[data-open]");
      var id = toggle.dataset.toggle;
      opened[id] = !(id in opened ? opened[id] : row.dataset.open === "1");
      applyTree();
      return;
    }
    var copy = e.target.closest("button[data-copy]");
    if (copy) {
      e.preventDefault();
      try { await navigator.clipboard.writeText(copy.dataset.copy); copy.textContent = "copied"; }
      catch (err) { copy.textContent = "select the text to copy"; }
      return;
    }
    var log = e.target.closest("a.log[data-log]");
    if (log) { e.preventDefault(); openLog(log.dataset.log, log.textContent); return; }
    if (e.target.id === "log-close") { closeLog(); }
  });

  document.addEventListener("change", function (e) {
    var picker = e.target.closest("select[data-navigate]");
    if (picker) location.href = picker.value;
  });

  document.addEventListener("submit", async function (e) {
    var form = e.target;
    if (form.classList.contains("terminate")) {
      e.preventDefault();
      var exec = execId();
      var said = form.querySelector(".terminate-result");
      var cause = form.elements.cause.value.trim();
      if (!cause) { show(said, "Say why it is terminated: the cause stays with the execution.", false); return; }
      try {
        await api("DELETE", "/api/v1/executions/" + [exec.project, exec.domain, exec.name].map(encodeURIComponent).join("/"),
          {id: exec, cause: cause});
        var live = form.closest("[data-live]");
        if (live) delete live.dataset.dirty;
        if (document.activeElement) document.activeElement.blur();  // a focused region is not refreshed
        show(said, "Terminating…", true);
        if (!polling()) { content().dataset.running = "1"; }
        setTimeout(refresh, 200);
      } catch (err) { show(said, err.message, false); }
    } else if (form.classList.contains("signal-form")) {
      e.preventDefault();
      var id = execId();
      var out = form.parentElement.querySelector(".signal-result");
      try {
        await api("POST", "/console/api/signals", {project: id.project, domain: id.domain, execution: id.name,
          signal_id: form.dataset.signal, value: form.elements.value.value});
        show(out, "Value set", true);
        var region = form.closest("[data-live]");
        if (region) delete region.dataset.dirty;
        setTimeout(refresh, 200);
      } catch (err) { show(out, err.message, false); }
    } else if (form.classList.contains("launch")) {
      e.preventDefault();
      var inputs = {};
      form.querySelectorAll("[data-input]").forEach(function (el) {
        inputs[el.dataset.input] = el.type === "checkbox" ? (el.checked ? "true" : "false") : el.value;
      });
      var spec = JSON.parse(form.dataset.target);
      spec.inputs = inputs;
      spec.options = {};
      form.querySelectorAll("[data-option]").forEach(function (el) {
        spec.options[el.dataset.option] = el.type === "checkbox" ? (el.checked ? "true" : "false") : el.value;
      });
      var result = form.querySelector(".launch-result");
      var submit = form.querySelector("button[type=submit]");
      submit.disabled = true;
      try {
        var r = await api("POST", "/console/api/launch", spec);
        show(result, "Launched " + r.id.name, true);
        location.href = r.url;
      } catch (err) { show(result, err.message, false); submit.disabled = false; }
    }
  });

  // ---- log viewer: streams /logs/<path>?offset=N while the execution runs ----
  var logState = null;

  function openLog(path, title) {
    closeLog();
    var panel = document.getElementById("log-panel");
    if (!panel) { location.href = path; return; }
    document.getElementById("log-title").textContent = title + " — " + path.replace(/^\/logs\//, "");
    document.getElementById("log-raw").href = path;
    document.getElementById("log-text").textContent = "";
    panel.classList.add("open");
    logState = {path: path, offset: 0, timer: null};
    pollLog(logState);
  }

  function closeLog() {
    if (logState && logState.timer) clearTimeout(logState.timer);
    logState = null;
    var panel = document.getElementById("log-panel");
    if (panel) panel.classList.remove("open");
  }

  async function pollLog(state) {
    var got = 0;
    try {
      var r = await fetch(state.path + "?offset=" + state.offset, {cache: "no-store"});
      if (r.ok) {
        var text = await r.text();
        var next = parseInt(r.headers.get("X-Next-Offset") || "0", 10);
        got = next - state.offset;
        if (next < state.offset) document.getElementById("log-text").textContent = "";
        state.offset = next;
        if (text && logState === state) {
          var pre = document.getElementById("log-text");
          if (state.placeholder) { pre.textContent = ""; state.placeholder = false; }
          var atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 8;
          pre.textContent += text;
          if (atEnd) pre.scrollTop = pre.scrollHeight;
        }
      } else if (r.status === 404 && logState === state) {
        document.getElementById("log-text").textContent = "(no log yet)";
        state.placeholder = true;
      }
    } catch (err) { /* try again */ }
    if (logState !== state) return;
    if (got > 0 || polling()) state.timer = setTimeout(function () { pollLog(state); }, got > 0 ? 200 : 1000);
  }
})();
