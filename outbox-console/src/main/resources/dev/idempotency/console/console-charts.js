/* The overview's charts: events per second written and published, and commit-to-publish latency, over the
   last minutes, from the console's rates.json, drawn with uPlot (served from the jar). A file of its own,
   since the console's CSP allows no inline script. */
(function () {
  "use strict";
  var rates = document.getElementById("rates");
  var latency = document.getElementById("latency");
  if (!rates || typeof uPlot === "undefined") {
    return;
  }

  function draw(box, series, axis, columns) {
    var options = {
      width: Math.max(320, box.clientWidth - 16),
      height: 220,
      // UTC, as every time the console shows.
      tzDate: function (seconds) { return uPlot.tzDate(new Date(seconds * 1000), "Etc/UTC"); },
      series: [{}].concat(series),
      axes: [{}, { label: axis }]
    };
    new uPlot(options, columns, box);
    box.setAttribute("data-rendered", "true");
  }

  fetch(rates.getAttribute("data-source"), { credentials: "same-origin" })
    .then(function (response) {
      if (!response.ok) {
        throw new Error("HTTP " + response.status);
      }
      return response.json();
    })
    .then(function (data) {
      draw(rates, [
        { label: "written /s", stroke: "#1d5bd6", width: 2 },
        { label: "published /s", stroke: "#2e7d32", width: 2 }
      ], "events/s", [data.time, data.written, data.published]);
      if (latency) {
        draw(latency, [
          { label: "p50 ms", stroke: "#2e7d32", width: 2 },
          { label: "p99 ms", stroke: "#e08a00", width: 2 },
          { label: "max ms", stroke: "#c62828", width: 1, dash: [4, 4] }
        ], "ms", [data.time, data.p50, data.p99, data.max]);
      }
    })
    .catch(function (error) {
      rates.textContent = "The chart could not load: " + error.message;
      if (latency) {
        latency.textContent = rates.textContent;
      }
    });
})();
