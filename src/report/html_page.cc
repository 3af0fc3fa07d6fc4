#include "report/html_page.h"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace shardscope::report {
namespace {

constexpr std::string_view kDataOpen = "<script type=\"application/json\" id=\"report-data\">";

constexpr std::string_view kHead = R"(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="shardscope report">
<title>ShardScope report</title>
<style>
body { font-family: system-ui, sans-serif; margin: 0 auto; max-width: 1200px; padding: 1em 2em; color: #222; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: .2em; margin-top: 2em; }
h3 { font-size: 1em; margin: .5em 0; }
p.note { color: #555; max-width: 70em; }
nav a { margin-right: 1em; }
figure.chart { margin: 1em 0 2em 0; }
.canvas-box { position: relative; width: 100%; }
details { margin: .3em 0 1em 0; } summary { cursor: pointer; color: #0072B2; }
table { border-collapse: collapse; font-size: .85em; margin-top: .4em; }
th, td { border: 1px solid #ddd; padding: .2em .5em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
.error { color: #b00; font-weight: bold; }
</style>
)";

// Lays out the sections and gives each chart's config to Chart.js. Every canvas
// gets data-marks (elements Chart.js created) so a test can tell it drew.
constexpr std::string_view kScript = R"(<script>
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('report-data').textContent);
  var root = document.getElementById('report');
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function table(t, open) {
    var d = el('details');
    if (open) d.open = true;
    d.appendChild(el('summary', null, (t.title || 'table') + ' (' + t.rows.length + ' rows)'));
    var tab = el('table'), tr = el('tr');
    t.columns.forEach(function (c) { tr.appendChild(el('th', null, c)); });
    tab.appendChild(tr);
    t.rows.forEach(function (r) {
      var row = el('tr');
      r.forEach(function (c) { row.appendChild(el('td', null, c)); });
      tab.appendChild(row);
    });
    d.appendChild(tab);
    if (t.note) d.appendChild(el('p', 'note', t.note));
    return d;
  }
  document.title = data.title;
  root.appendChild(el('h1', null, data.title));
  if (data.subtitle) root.appendChild(el('p', 'note', data.subtitle));
  var nav = el('nav');
  data.sections.forEach(function (s) {
    var a = el('a', null, s.title); a.href = '#' + s.id; nav.appendChild(a);
  });
  root.appendChild(nav);
  var pending = [];
  data.sections.forEach(function (s) {
    var sec = el('section'); sec.id = s.id;
    sec.appendChild(el('h2', null, s.title));
    if (s.note) sec.appendChild(el('p', 'note', s.note));
    s.charts.forEach(function (c) {
      var fig = el('figure', 'chart'), box = el('div', 'canvas-box'), canvas = el('canvas');
      canvas.id = c.id;
      box.style.height = c.height + 'px';
      box.appendChild(canvas);
      fig.appendChild(box);
      fig.appendChild(table(c.table, false));
      sec.appendChild(fig);
      pending.push([canvas, c]);
    });
    s.tables.forEach(function (t) { sec.appendChild(table(t, true)); });
    root.appendChild(sec);
  });
  var drawn = 0, failed = 0;
  pending.forEach(function (p) {
    var canvas = p[0], c = p[1], config = c.config;
    try {
      if (c.heatmap) {
        // Square cells sized to the plot area: the data's extent is fixed by the axes.
        var xs = config.options.scales.x, ys = config.options.scales.y;
        var cols = xs.max - xs.min, rows = ys.max - ys.min;
        // Ticks on whole cells only (the axes run from -0.5 to n - 0.5).
        [xs, ys].forEach(function (a) {
          a.ticks = Object.assign({}, a.ticks, { callback: function (v) {
            return Number.isInteger(v) ? String(v) : '';
          } });
        });
        config.data.datasets.forEach(function (d) {
          d.pointRadius = function (ctx) {
            var a = ctx.chart.chartArea;
            if (!a) return 2;
            return Math.max(1, Math.min(a.width / cols, a.height / rows) / 2);
          };
        });
        config.options.plugins.tooltip = { callbacks: { label: function (ctx) {
          return 'from ' + ctx.raw.y + ' to ' + ctx.raw.x + ': ' + ctx.raw.v.toPrecision(3);
        } } };
      }
      var chart = new Chart(canvas, config);
      var marks = 0;
      chart.data.datasets.forEach(function (d, i) { marks += chart.getDatasetMeta(i).data.length; });
      canvas.setAttribute('data-marks', String(marks));
      drawn++;
    } catch (e) {
      failed++;
      canvas.parentNode.appendChild(el('p', 'error', 'chart failed: ' + e));
      console.error('chart ' + c.id + ' failed: ' + e);
    }
  });
  document.body.setAttribute('data-charts-drawn', String(drawn));
  document.body.setAttribute('data-charts-failed', String(failed));
  // Milliseconds from navigation start until every chart is drawn (docs/BENCHMARKS.md).
  document.body.setAttribute('data-render-ms', String(Math.round(performance.now())));
})();
</script>
)";

void ReplaceAll(std::string* s, std::string_view from, std::string_view to) {
  for (size_t pos = s->find(from); pos != std::string::npos; pos = s->find(from, pos + to.size())) {
    s->replace(pos, from.size(), to);
  }
}

}  // namespace

StatusOr<std::string> LoadChartJs(const std::string& path) {
  std::string file = path;
  if (file.empty()) {
    const char* env = std::getenv("SHARDSCOPE_CHART_JS");
    file = env != nullptr && *env != '\0' ? env : kDefaultChartJsPath;
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    return IoError(
        "Chart.js not found at {}: the report inlines it from the Debian package libjs-chart.js "
        "(apt-get install libjs-chart.js), or set SHARDSCOPE_CHART_JS to a chart.min.js",
        file);
  }
  std::stringstream ss;
  ss << in.rdbuf();
  std::string js = ss.str();
  if (js.find("Chart") == std::string::npos) {
    return IoError("{} does not look like Chart.js (no 'Chart' in it)", file);
  }
  return js;
}

StatusOr<std::string> RenderHtmlPage(const nlohmann::json& data, const std::string& chart_js) {
  if (chart_js.find("</script") != std::string::npos) {
    return InternalError("Chart.js contains '</script' and cannot be inlined as it is");
  }
  // "</" inside the JSON would end the script element; "<\/" is the same JSON string.
  std::string json_text = data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  ReplaceAll(&json_text, "</", "<\\/");
  std::string html;
  html.reserve(kHead.size() + chart_js.size() + json_text.size() + kScript.size() + 256);
  html += kHead;
  html += "<script>\n";
  html += chart_js;
  html += "\n</script>\n</head>\n<body>\n<div id=\"report\"></div>\n";
  html += kDataOpen;
  html += json_text;
  html += "</script>\n";
  html += kScript;
  html += "</body>\n</html>\n";
  return html;
}

StatusOr<nlohmann::json> ExtractReportData(const std::string& html) {
  size_t begin = html.find(kDataOpen);
  if (begin == std::string::npos) return InvalidArgument("no report-data script in the page");
  begin += kDataOpen.size();
  size_t end = html.find("</script>", begin);
  if (end == std::string::npos) return InvalidArgument("report-data script is not closed");
  nlohmann::json j = nlohmann::json::parse(html.substr(begin, end - begin), nullptr, false);
  if (j.is_discarded()) return InvalidArgument("report-data is not valid JSON");
  return j;
}

}  // namespace shardscope::report
