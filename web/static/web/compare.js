// The compare page's charts (Chart.js), their p10-p90 error bars, and their PNG downloads. The data is the
// page's <script type="application/json" id="compare-data">; the table below the charts carries the same figures.
(function () {
  "use strict";
  var source = document.getElementById("compare-data");
  if (!source || typeof window.Chart === "undefined") { return; }
  var data = JSON.parse(source.textContent);
  var Chart = window.Chart;
  // Dark enough for 3:1 against white (non-text contrast), distinct in hue.
  var COLOURS = ["#0b5cad", "#a4161a", "#1d6b34", "#7a4b00", "#6a3d9a", "#00707a", "#b3367a", "#4a5260"];
  var CLOUD = "#8a93a0";
  Chart.defaults.color = "#1b1f24";
  Chart.defaults.font.family = getComputedStyle(document.body).fontFamily;

  // Error bars: a p10-p90 whisker over the bar a range sits on (the stack's top for stacked bars). The
  // ranges stay in this closure rather than in the chart's options, which Chart.js resolves per element.
  function rangeBars(ranges) {
    return { id: "rangeBars", afterDatasetsDraw: function (chart) {
      if (!ranges) { return; }
      var meta = chart.getDatasetMeta(ranges.dataset);
      var y = chart.scales.y;
      var ctx = chart.ctx;
      ctx.save();
      ctx.strokeStyle = "#1b1f24";
      ctx.lineWidth = 1.5;
      ranges.values.forEach(function (range, i) {
        var bar = meta.data[i];
        if (!range || !bar) { return; }
        var x = bar.x, low = y.getPixelForValue(range.p10), high = y.getPixelForValue(range.p90);
        var half = Math.min(6, (bar.width || 12) / 4);
        ctx.beginPath();
        ctx.moveTo(x, low); ctx.lineTo(x, high);
        ctx.moveTo(x - half, low); ctx.lineTo(x + half, low);
        ctx.moveTo(x - half, high); ctx.lineTo(x + half, high);
        ctx.stroke();
      });
      ctx.restore();
    } };
  }
  // A white background, so that a downloaded PNG reads like the page (a canvas is transparent).
  var paper = {
    id: "paper",
    beforeDraw: function (chart) {
      var ctx = chart.ctx;
      ctx.save();
      ctx.globalCompositeOperation = "destination-over";
      ctx.fillStyle = "#ffffff";
      ctx.fillRect(0, 0, chart.width, chart.height);
      ctx.restore();
    }
  };

  function rangeLabel(ranges, index) {
    var range = ranges && ranges.values[index];
    if (!range) { return ""; }
    return "p10–p90: " + range.p10.toPrecision(3) + " – " + range.p90.toPrecision(3);
  }

  data.charts.forEach(function (spec) {
    var canvas = document.getElementById("chart-" + spec.id);
    if (!canvas) { return; }
    var datasets = spec.datasets.map(function (series, i) {
      var colour = series.stack === "cloud" ? CLOUD : COLOURS[i % COLOURS.length];
      return { label: series.label, data: series.values, stack: series.stack, backgroundColor: colour,
               borderColor: colour, borderWidth: 0 };
    });
    // The axis reaches the highest p90, so that every whisker is drawn whole.
    var top = spec.ranges ? Math.max.apply(null, spec.ranges.values.map(function (r) { return r ? r.p90 : 0; })) : undefined;
    new Chart(canvas, {
      type: "bar",
      data: { labels: data.plans, datasets: datasets },
      plugins: [rangeBars(spec.ranges), paper],
      options: {
        responsive: true,
        maintainAspectRatio: false,
        animation: false,
        scales: {
          x: { stacked: true },
          y: { stacked: true, beginAtZero: true, suggestedMax: top, title: { display: true, text: spec.axis } }
        },
        plugins: {
          legend: { position: "bottom" },
          tooltip: {
            callbacks: {
              footer: function (items) {
                var first = items[0];
                return first && spec.ranges && first.datasetIndex === spec.ranges.dataset
                  ? rangeLabel(spec.ranges, first.dataIndex) : "";
              }
            }
          }
        }
      }
    });
  });

  document.querySelectorAll("[data-download-chart]").forEach(function (button) {
    var canvas = document.getElementById(button.getAttribute("data-download-chart"));
    if (!canvas) { return; }
    button.hidden = false;
    button.addEventListener("click", function () {
      var link = document.createElement("a");
      link.href = canvas.toDataURL("image/png");
      link.download = button.getAttribute("data-filename") || "chart.png";
      document.body.appendChild(link);
      link.click();
      link.remove();
    });
  });
})();
