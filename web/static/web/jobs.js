// Search and sweep page: follow a queued or running job through /api/v1/runs/<id>/ every second (reload
// when it is done), and draw the Pareto scatter of a finished one from its json_script data.
(function () {
  "use strict";
  function data(id) {
    var node = document.getElementById(id);
    return node ? JSON.parse(node.textContent) : null;
  }
  function count(n) { return Number(n || 0).toLocaleString("en-US"); }

  function follow(job) {
    var bar = document.getElementById("job-progress");
    var status = document.getElementById("job-status");
    function tick() {
      fetch(job.url, { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (response) {
          if (!response.ok) { throw new Error("HTTP " + response.status); }
          return response.json();
        })
        .then(function (run) {
          if (run.status === "succeeded" || run.status === "failed") {
            window.location.reload();
            return;
          }
          if (bar) {
            if (run.points_total > 0) {
              bar.max = run.points_total;
              bar.value = run.points_done;
            } else {
              bar.removeAttribute("value");
            }
          }
          var text = run.status.charAt(0).toUpperCase() + run.status.slice(1) + ": " + count(run.points_done) +
            " of " + count(run.points_total) + " " + job.unit + " done.";
          if (status && status.textContent !== text) { status.textContent = text; }
          window.setTimeout(tick, 1000);
        })
        .catch(function () { window.setTimeout(tick, 3000); });
    }
    window.setTimeout(tick, 1000);
  }

  // Ticks of a narrow axis need a fourth digit to differ from each other.
  function money(x, digits) {
    var d = digits || 3;
    var a = Math.abs(x);
    var units = [[1e12, " T"], [1e9, " G"], [1e6, " M"], [1e3, " k"]];
    for (var i = 0; i < units.length; i++) {
      if (a >= units[i][0]) { return "$" + (x / units[i][0]).toPrecision(d) + units[i][1]; }
    }
    return "$" + x.toPrecision(d);
  }

  function draw(chart) {
    var canvas = document.getElementById("pareto-chart");
    if (!canvas || !window.Chart) { return; }
    var css = window.getComputedStyle(document.documentElement);
    var accent = css.getPropertyValue("--accent").trim() || "#0b5cad";
    var muted = css.getPropertyValue("--muted").trim() || "#4a5260";
    var carbon = chart.points.map(function (p) { return p.carbon_t || 0; });
    var lo = Math.min.apply(null, carbon), hi = Math.max.apply(null, carbon);
    function radius(p) { return hi > lo ? 4 + 8 * ((p.carbon_t || 0) - lo) / (hi - lo) : 6; }
    function series(onFront) {
      var points = chart.points.filter(function (p) { return p.pareto === onFront; });
      if (onFront) { points.sort(function (a, b) { return a.x - b.x; }); }
      return {
        label: onFront ? "Pareto front" : "Other " + chart.noun,
        data: points.map(function (p) { return { x: p.x, y: p.y, label: p.label, carbon: p.carbon_t }; }),
        pointRadius: points.map(radius),
        pointHoverRadius: points.map(function (p) { return radius(p) + 2; }),
        backgroundColor: onFront ? accent : "rgba(74, 82, 96, 0.35)",
        borderColor: onFront ? accent : muted,
        showLine: onFront,
        borderWidth: onFront ? 2 : 1
      };
    }
    new window.Chart(canvas, {
      type: "scatter",
      data: { datasets: [series(true), series(false)] },
      options: {
        maintainAspectRatio: false,
        animation: false,
        scales: {
          x: { title: { display: true, text: chart.x_label }, ticks: { callback: function (v) { return money(v, 4); } } },
          y: { title: { display: true, text: chart.y_label } }
        },
        plugins: {
          tooltip: {
            callbacks: {
              label: function (item) {
                var p = item.raw;
                return p.label + ": " + Number(p.y).toPrecision(3) + ", " + money(p.x) + ", " +
                  Number(p.carbon || 0).toPrecision(3) + " tCO2e";
              }
            }
          }
        }
      }
    });
  }

  var job = data("job-data");
  if (job) { follow(job); }
  var chart = data("pareto-data");
  if (chart) { draw(chart); }
})();
