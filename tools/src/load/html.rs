//! `--report FILE.html`: the report as one self-contained page. The charts are SVG
//! drawn here (no script, no style sheet or font from elsewhere): throughput, p50 and
//! p99 second by second, errors second by second, and each operation's latency by
//! percentile (HDR style: the percentile on a log scale of 1 ÷ (1 − p)); then the
//! run's settings, the driver's CPU, and the server's `/metrics` deltas.

use std::fmt::Write;

use super::report::{OpReport, Report};

/// Colours of the series, in turn.
const COLOURS: [&str; 10] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
];

const WIDTH: f64 = 860.0;
const HEIGHT: f64 = 300.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 20.0;
const BOTTOM: f64 = 40.0;

fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let _ = pulldown_cmark_escape::escape_html(&mut out, s);
    out
}

/// A chart's axis: linear or log10, over [lo, hi].
#[derive(Clone, Copy)]
struct Axis {
    lo: f64,
    hi: f64,
    log: bool,
}

impl Axis {
    fn of(values: impl Iterator<Item = f64>, log: bool) -> Axis {
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for v in values.filter(|v| v.is_finite() && (!log || *v > 0.0)) {
            lo = lo.min(v);
            hi = hi.max(v);
        }
        if !lo.is_finite() {
            (lo, hi) = if log { (1.0, 10.0) } else { (0.0, 1.0) };
        }
        if log {
            lo = 10f64.powf(lo.log10().floor());
            hi = 10f64.powf(hi.log10().ceil().max(lo.log10() + 1.0));
        } else {
            lo = lo.min(0.0);
            if hi <= lo {
                hi = lo + 1.0;
            }
            hi *= 1.05;
        }
        Axis { lo, hi, log }
    }

    /// 0..1 along the axis.
    fn frac(&self, v: f64) -> f64 {
        if self.log {
            (v.log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        }
    }

    fn ticks(&self) -> Vec<f64> {
        if self.log {
            let (a, b) = (self.lo.log10() as i32, self.hi.log10() as i32);
            (a..=b).map(|e| 10f64.powi(e)).collect()
        } else {
            let step = nice_step((self.hi - self.lo) / 5.0);
            let mut t = (self.lo / step).ceil() * step;
            let mut out = Vec::new();
            while t <= self.hi + 1e-9 {
                out.push(t);
                t += step;
            }
            out
        }
    }
}

fn nice_step(raw: f64) -> f64 {
    let mag = 10f64.powf(raw.max(1e-12).log10().floor());
    let n = raw / mag;
    let m = if n <= 1.0 {
        1.0
    } else if n <= 2.0 {
        2.0
    } else if n <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * mag
}

fn number(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{:.1}", v).trim_end_matches(".0").to_owned()
    } else {
        format!("{v}")
    }
}

/// One line of a chart.
struct Line {
    name: String,
    points: Vec<(f64, f64)>,
}

/// What a chart shows: its id, title, axes' titles, and which axes are log scales.
struct Spec<'a> {
    id: &'a str,
    title: &'a str,
    x_title: &'a str,
    y_title: &'a str,
    x_log: bool,
    y_log: bool,
}

/// An SVG line chart. `x_label(v)` writes an x tick's text.
fn chart(spec: &Spec<'_>, lines: &[Line], x_label: &dyn Fn(f64) -> String) -> String {
    let Spec {
        id,
        title,
        x_title,
        y_title,
        x_log,
        y_log,
    } = *spec;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<section class=\"chart\" id=\"{id}\"><h3>{}</h3>",
        esc(title)
    );
    let drawn: Vec<&Line> = lines.iter().filter(|l| !l.points.is_empty()).collect();
    if drawn.is_empty() {
        let _ = writeln!(out, "<p class=\"none\">no data</p></section>");
        return out;
    }
    let xs = Axis::of(
        drawn.iter().flat_map(|l| l.points.iter().map(|p| p.0)),
        x_log,
    );
    let ys = Axis::of(
        drawn.iter().flat_map(|l| l.points.iter().map(|p| p.1)),
        y_log,
    );
    let (w, h) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
    let px = |v: f64| LEFT + w * xs.frac(v);
    let py = |v: f64| TOP + h * (1.0 - ys.frac(v));
    let _ = writeln!(
        out,
        "<svg role=\"img\" aria-label=\"{}\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" width=\"{WIDTH}\" height=\"{HEIGHT}\">",
        esc(title)
    );
    let _ = writeln!(
        out,
        "<rect class=\"plot\" x=\"{LEFT}\" y=\"{TOP}\" width=\"{w}\" height=\"{h}\"/>"
    );
    for t in ys.ticks() {
        let y = py(t);
        let _ = writeln!(
            out,
            "<line class=\"grid\" x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\"/><text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            LEFT + w,
            LEFT - 6.0,
            y + 4.0,
            number(t)
        );
    }
    for t in xs.ticks() {
        let x = px(t);
        let _ = writeln!(
            out,
            "<line class=\"grid\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{TOP}\" y2=\"{:.1}\"/><text class=\"tick\" x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            TOP + h,
            TOP + h + 16.0,
            esc(&x_label(t))
        );
    }
    let _ = writeln!(
        out,
        "<text class=\"axis\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
        LEFT + w / 2.0,
        HEIGHT - 4.0,
        esc(x_title)
    );
    let _ = writeln!(
        out,
        "<text class=\"axis\" x=\"14\" y=\"{:.1}\" text-anchor=\"middle\" transform=\"rotate(-90 14 {:.1})\">{}</text>",
        TOP + h / 2.0,
        TOP + h / 2.0,
        esc(y_title)
    );
    for (i, line) in drawn.iter().enumerate() {
        let mut d = String::new();
        let mut pen_down = false;
        for &(x, y) in &line.points {
            if (x_log && x <= 0.0) || (y_log && y <= 0.0) || !y.is_finite() {
                pen_down = false;
                continue;
            }
            let _ = write!(
                d,
                "{}{:.1} {:.1} ",
                if pen_down { "L" } else { "M" },
                px(x),
                py(y)
            );
            pen_down = true;
        }
        let colour = COLOURS[i % COLOURS.len()];
        let _ = writeln!(
            out,
            "<path class=\"series\" data-series=\"{}\" stroke=\"{colour}\" d=\"{}\"><title>{}</title></path>",
            esc(&line.name),
            d.trim_end(),
            esc(&line.name)
        );
    }
    let _ = writeln!(out, "</svg><ul class=\"legend\">");
    for (i, line) in drawn.iter().enumerate() {
        let _ = writeln!(
            out,
            "<li><span style=\"background:{}\"></span>{}</li>",
            COLOURS[i % COLOURS.len()],
            esc(&line.name)
        );
    }
    let _ = writeln!(out, "</ul></section>");
    out
}

fn op_row(out: &mut String, o: &OpReport) {
    let ratio =
        |r: Option<f64>, digits: usize| r.map_or(String::new(), |r| format!("{r:.digits$}"));
    let _ = writeln!(
        out,
        "<tr><td>{}{}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td><td>{}</td><td>{}</td></tr>",
        esc(&o.op),
        if o.held { " [held]" } else { "" },
        o.count,
        o.errors,
        o.req_per_s,
        o.mean_ms,
        o.p50_ms,
        o.p99_ms,
        o.p999_ms,
        o.max_ms,
        ratio(o.throughput_vs_ceiling, 3),
        ratio(o.p50_vs_ceiling, 2)
    );
}

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:960px}
h1{font-size:22px}h2{font-size:18px;margin-top:32px}h3{font-size:15px;margin:8px 0}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
td:first-child,th:first-child{text-align:left}.pass{color:#080;font-weight:bold}.fail{color:#b00;font-weight:bold}
.refused{background:#fee;border:1px solid #b00;padding:8px}
svg{display:block;background:#fff}.plot{fill:#fafafa;stroke:#999}.grid{stroke:#e3e3e3}
.tick{font-size:11px;fill:#555}.axis{font-size:12px;fill:#333}
.series{fill:none;stroke-width:1.6}.legend{list-style:none;padding:0;margin:4px 0 16px 60px;columns:2}
.legend span{display:inline-block;width:14px;height:4px;margin:0 6px 3px 0}";

/// The page.
pub fn page(r: &Report) -> String {
    let mut out = String::new();
    let title = format!("hearth load: {} with {} users", r.scenario, r.users);
    let _ = writeln!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/><title>{}</title><style>{STYLE}</style></head><body>",
        esc(&title)
    );
    let _ = writeln!(out, "<h1>{}</h1>", esc(&title));
    let _ = writeln!(
        out,
        "<p>Target {} · {} · {:.1} s measured · <span class=\"{}\">{}</span></p>",
        esc(&r.target),
        esc(&r.pacing),
        r.duration_s,
        if r.passed { "pass" } else { "fail" },
        if r.passed { "PASS" } else { "FAIL" }
    );
    for f in &r.failures {
        let _ = writeln!(out, "<p class=\"fail\">FAIL: {}</p>", esc(f));
    }
    if let Some(why) = &r.ratio_refused {
        let _ = writeln!(
            out,
            "<p class=\"refused\">Ratios to the ceiling withheld: the driver, not the server, was the limit ({}).</p>",
            esc(why)
        );
    }
    if let Some(ratio) = r.fanout_ratio {
        let _ = writeln!(
            out,
            "<p>Fan-out: hearth's last poll p50 is <b>{ratio:.2}×</b> the ceiling's (goal ≤ 2×: {}).</p>",
            if ratio <= 2.0 { "met" } else { "missed" }
        );
    }

    let _ = writeln!(out, "<h2>Operations</h2><table><tr><th>operation</th><th>count</th><th>errors</th><th>req/s</th><th>mean ms</th><th>p50 ms</th><th>p99 ms</th><th>p99.9 ms</th><th>max ms</th><th>req/s ×c</th><th>p50 ×c</th></tr>");
    for o in r.ops.iter().chain(r.ceiling.iter()) {
        op_row(&mut out, o);
    }
    let _ = writeln!(out, "</table>");
    for o in &r.ops {
        for (code, n) in &o.errors_by_code {
            let _ = writeln!(out, "<p>errors {}: {} × {n}</p>", esc(&o.op), esc(code));
        }
    }

    if let Some(cap) = &r.capacity {
        let _ = writeln!(out, "<h2>Capacity</h2><p>");
        let _ = match cap.healthy_users {
            Some(n) if cap.reached_max => write!(out, "At least <b>{n}</b> users: every user added was served healthily."),
            Some(n) => write!(out, "<b>{n}</b> users: the largest healthy step (mean &lt; 100 ms, p99 &lt; 2 s, errors and timeouts &lt; 0.025 %)."),
            None => write!(out, "Not even the first step was healthy."),
        };
        let _ = writeln!(out, "</p><table><tr><th>users</th><th>requests</th><th>errors</th><th>req/s</th><th>mean ms</th><th>p99 ms</th><th>verdict</th></tr>");
        for s in &cap.steps {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{:.2}</td><td>{:.2}</td><td>{}</td></tr>",
                s.users,
                s.requests,
                s.errors,
                s.req_per_s,
                s.mean_ms,
                s.p99_ms,
                if s.healthy { "healthy".to_owned() } else { esc(&s.failures.join("; ")) }
            );
        }
        let _ = writeln!(out, "</table>");
    }

    let _ = writeln!(out, "<h2>Over time</h2>");
    let name = |phase: &str, op: &str| {
        if phase == "hearth" || op == "ceiling" {
            op.to_owned()
        } else {
            format!("{phase}: {op}")
        }
    };
    let lines = |f: &dyn Fn(&super::report::Point) -> Option<f64>| -> Vec<Line> {
        r.series
            .iter()
            .map(|s| Line {
                name: name(&s.phase, &s.op),
                points: s
                    .points
                    .iter()
                    .filter_map(|p| f(p).map(|y| (f64::from(p.t), y)))
                    .collect(),
            })
            .collect()
    };
    let secs = |v: f64| format!("{v}");
    out.push_str(&chart(
        &Spec {
            id: "throughput",
            title: "Throughput: answers per second",
            x_title: "seconds from the phase's start",
            y_title: "answers/s",
            x_log: false,
            y_log: false,
        },
        &lines(&|p| Some(p.count as f64)),
        &secs,
    ));
    out.push_str(&chart(
        &Spec {
            id: "p50",
            title: "p50 latency per second",
            x_title: "seconds from the phase's start",
            y_title: "ms (log)",
            x_log: false,
            y_log: true,
        },
        &lines(&|p| (p.count > 0).then_some(p.p50_ms)),
        &secs,
    ));
    out.push_str(&chart(
        &Spec {
            id: "p99",
            title: "p99 latency per second",
            x_title: "seconds from the phase's start",
            y_title: "ms (log)",
            x_log: false,
            y_log: true,
        },
        &lines(&|p| (p.count > 0).then_some(p.p99_ms)),
        &secs,
    ));
    out.push_str(&chart(
        &Spec {
            id: "errors",
            title: "Errors per second",
            x_title: "seconds from the phase's start",
            y_title: "errors/s",
            x_log: false,
            y_log: false,
        },
        &lines(&|p| Some(p.errors as f64)),
        &secs,
    ));

    let _ = writeln!(out, "<h2>Latency by percentile</h2>");
    let hdr: Vec<Line> = r
        .ops
        .iter()
        .chain(r.ceiling.iter())
        .map(|o| Line {
            name: o.op.clone(),
            // x: 1 ÷ (1 − p), so 90 % is 10, 99 % is 100, ...
            points: o
                .distribution
                .iter()
                .map(|&(p, ms)| (1.0 / (1.0 - p / 100.0).max(1e-9), ms))
                .collect(),
        })
        .collect();
    // Ticks at 1, 10, 100, ...: 0 %, 90 %, 99 %, 99.9 %, ...
    let percentile = |v: f64| {
        let decimals = (v.log10().round() as usize).saturating_sub(2);
        format!("{:.*}%", decimals, 100.0 * (1.0 - 1.0 / v))
    };
    out.push_str(&chart(
        &Spec {
            id: "distribution",
            title: "Latency by percentile (HDR, measured part)",
            x_title: "percentile",
            y_title: "ms (log)",
            x_log: true,
            y_log: true,
        },
        &hdr,
        &percentile,
    ));

    let _ = writeln!(out, "<h2>Driver</h2><table><tr><th>phase</th><th>wall s</th><th>driver CPU s</th><th>CPU % of its {} thread(s)</th><th>threads busy %</th><th>connections opened</th><th>ceiling process CPU s</th></tr>", r.driver_threads);
    for p in &r.phases {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{:.0}</td><td>{}</td><td>{}</td></tr>",
            esc(&p.phase),
            p.wall_s,
            p.driver_cpu_s.map_or(String::new(), |c| format!("{c:.2}")),
            p.driver_cpu_percent_of_threads
                .map_or(String::new(), |c| format!("{c:.0}")),
            p.driver_busy_percent,
            p.connections_opened,
            p.ceiling_cpu_s.map_or(String::new(), |c| format!("{c:.2}"))
        );
    }
    let _ = writeln!(out, "</table>");
    if let Some(w) = &r.wrk {
        let _ = writeln!(
            out,
            "<p>wrk against the ceiling: {:.0} req/s{} (<code>{}</code>)</p>",
            w.req_per_s,
            r.driver_vs_wrk.map_or(String::new(), |s| format!(
                "; the driver reached {s:.2}× of it"
            )),
            esc(&w.command)
        );
    }

    let _ = writeln!(out, "<h2>Settings</h2><table>");
    for (k, v) in &r.settings {
        let _ = writeln!(out, "<tr><td>{}</td><td>{}</td></tr>", esc(k), esc(v));
    }
    let _ = writeln!(out, "</table>");

    let _ = writeln!(out, "<h2>Server metrics (change over the run)</h2>");
    match &r.metrics_url {
        None => {
            let _ = writeln!(
                out,
                "<p>No metrics listener known (<code>--metrics-url</code>).</p>"
            );
        }
        Some(u) if r.metrics.is_empty() => {
            let _ = writeln!(
                out,
                "<p>{}: nothing changed, or it did not answer.</p>",
                esc(u)
            );
        }
        Some(u) => {
            let _ = writeln!(out, "<p>Scraped from {} before and after the hearth phase (histogram buckets left out).</p><table><tr><th>series</th><th>before</th><th>after</th><th>change</th></tr>", esc(u));
            for m in &r.metrics {
                let _ = writeln!(
                    out,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    esc(&m.series),
                    m.before,
                    m.after,
                    m.delta
                );
            }
            let _ = writeln!(out, "</table>");
        }
    }
    let _ = writeln!(out, "</body></html>");
    out
}
