/* The overview's chart: events per second over the last minutes, from the console's rates.json,
   drawn with uPlot (served from the jar). A file of its own, since the console's CSP allows no inline script. */
(function () {
  "use strict";
  var box = document.getElementById("rates");
  if (!box || typeof uPlot === "undefined") {
    return;
  }
  fetch(box.getAttribute("data-source"), { credentials: "same-origin" })
    .then(function (response) {
      if (!response.ok) {
        throw new Error("HTTP " + response.status);
      }
      return response.json();
    })
    .then(function (rates) {
      var options = {
        width: Math.max(320, box.clientWidth - 16),
        height: 220,
        // UTC, as every time the console shows.
        tzDate: function (seconds) { return uPlot.tzDate(new Date(seconds * 1000), "Etc/UTC"); },
        series: [
          {},
          { label: "written /s", stroke: "#1d5bd6", width: 2 },
          { label: "published /s", stroke: "#2e7d32", width: 2 }
        ],
        axes: [{}, { label: "events/s" }]
      };
      new uPlot(options, [rates.time, rates.written, rates.published], box);
      box.setAttribute("data-rendered", "true");
    })
    .catch(function (error) {
      box.textContent = "The chart could not load: " + error.message;
    });
})();
