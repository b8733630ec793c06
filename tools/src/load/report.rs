//! The end-of-run report: a table per operation, ratios to the ceiling, the driver's
//! CPU, the thresholds' verdict, and the same as JSON.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use hdrhistogram::Histogram;

use super::driver::OpStats;

/// One operation's figures (latencies in milliseconds).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OpReport {
    pub op: String,
    pub count: u64,
    pub errors: u64,
    pub errors_by_code: BTreeMap<String, u64>,
    pub req_per_s: f64,
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
    /// A held request (long-poll): its latency is how long it was held.
    pub held: bool,
    /// `req_per_s` ÷ the ceiling's, and `p50_ms` ÷ the ceiling's, with `--ceiling`.
    pub throughput_vs_ceiling: Option<f64>,
    pub p50_vs_ceiling: Option<f64>,
    /// The latency distribution, HDR style: (percentile, ms) at percentiles 0, 68.4,
    /// 90, 96.8, 99, ... (ten points per decade of 1 ÷ (1 − p)), as far as the count
    /// reaches.
    pub distribution: Vec<(f64, f64)>,
    /// The latency histogram itself: (microseconds, answers) of each bucket that holds
    /// any, so that the reports of several drivers merge exactly (`merge`).
    #[serde(default)]
    pub recorded: Vec<(u64, u64)>,
}

/// One phase: the driver's CPU (and the ceiling's, when it ran as a child).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PhaseFigures {
    pub phase: String,
    pub wall_s: f64,
    pub driver_cpu_s: Option<f64>,
    /// The driver's CPU as a share of its threads' time.
    pub driver_cpu_percent_of_threads: Option<f64>,
    /// The time its runtime's threads were busy, as a share of their time (100 %:
    /// every thread busy all along, the driver is the limit).
    pub driver_busy_percent: f64,
    pub connections_opened: u64,
    pub ceiling_cpu_s: Option<f64>,
}

/// wrk's rate against the ceiling, in the same run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WrkFigure {
    pub command: String,
    pub req_per_s: f64,
}

/// A `/metrics` series that changed during the run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MetricDelta {
    pub series: String,
    pub before: f64,
    pub after: f64,
    pub delta: f64,
}

/// One second of one operation of one phase.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Point {
    /// Seconds from the phase's start.
    pub t: u32,
    pub count: u64,
    pub errors: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
}

/// An operation's seconds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OpSeries {
    pub phase: String,
    pub op: String,
    pub points: Vec<Point>,
}

/// One step of `capacity`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Step {
    pub users: usize,
    pub requests: u64,
    pub errors: u64,
    pub error_rate_percent: f64,
    /// Over every answer but the held long-polls.
    pub mean_ms: f64,
    pub p99_ms: f64,
    pub req_per_s: f64,
    pub healthy: bool,
    pub failures: Vec<String>,
    pub ops: Vec<OpReport>,
}

/// `capacity`'s answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Capacity {
    /// The largest healthy user count (`None`: not even the first step).
    pub healthy_users: Option<usize>,
    /// Every user was added and the last step was still healthy: the capacity is at
    /// least `healthy_users`, not measured.
    pub reached_max: bool,
    pub steps: Vec<Step>,
}

impl Capacity {
    pub fn of(steps: Vec<Step>) -> Capacity {
        let healthy_users = steps
            .iter()
            .take_while(|s| s.healthy)
            .last()
            .map(|s| s.users);
        Capacity {
            healthy_users,
            reached_max: steps.last().is_some_and(|s| s.healthy),
            steps,
        }
    }

    /// The operations of the last healthy step (else of the first).
    pub fn figure_ops(&self) -> Vec<OpReport> {
        self.steps
            .iter()
            .take_while(|s| s.healthy)
            .last()
            .or(self.steps.first())
            .map(|s| s.ops.clone())
            .unwrap_or_default()
    }
}

/// A phase's figures; `threads`: the driver's.
pub fn phase_figures(
    phase: &str,
    out: &super::PhaseOut,
    threads: usize,
    ceiling_cpu_s: Option<f64>,
) -> PhaseFigures {
    let wall = out.wall.as_secs_f64().max(1e-9);
    PhaseFigures {
        phase: phase.to_owned(),
        wall_s: wall,
        driver_cpu_s: out.driver_cpu_s,
        driver_cpu_percent_of_threads: out
            .driver_cpu_s
            .map(|c| 100.0 * c / (wall * threads.max(1) as f64)),
        driver_busy_percent: 100.0 * out.driver_busy.as_secs_f64() / (wall * threads.max(1) as f64),
        connections_opened: out.connections,
        ceiling_cpu_s,
    }
}

/// A phase's seconds as the report's series.
pub fn series(phase: &str, s: &super::driver::Series) -> Vec<OpSeries> {
    let mut out: Vec<OpSeries> = s
        .ops
        .iter()
        .map(|(op, seconds)| OpSeries {
            phase: phase.to_owned(),
            op: (*op).to_owned(),
            points: seconds
                .iter()
                .enumerate()
                .map(|(t, sec)| Point {
                    t: t as u32,
                    count: sec.count,
                    errors: sec.errors,
                    p50_ms: if sec.count > 0 {
                        ms(sec.hist.value_at_quantile(0.5))
                    } else {
                        0.0
                    },
                    p99_ms: if sec.count > 0 {
                        ms(sec.hist.value_at_quantile(0.99))
                    } else {
                        0.0
                    },
                })
                .collect(),
        })
        .collect();
    out.sort_by(|a, b| a.op.cmp(&b.op));
    out
}

/// The whole run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub scenario: String,
    pub target: String,
    pub users: usize,
    pub pacing: String,
    pub duration_s: f64,
    pub ops: Vec<OpReport>,
    pub ceiling: Option<OpReport>,
    /// Threads of the driver's runtime.
    pub driver_threads: usize,
    /// CPU seconds of the driver's threads, and their share of one core over the run.
    pub driver_cpu_s: Option<f64>,
    pub driver_cpu_percent_of_core: Option<f64>,
    /// CPU seconds of the whole process (with the in-process server, when there is one).
    pub process_cpu_s: Option<f64>,
    /// Each phase's driver CPU.
    pub phases: Vec<PhaseFigures>,
    /// wrk against the ceiling (`--wrk`), and the driver's rate against it as a share.
    pub wrk: Option<WrkFigure>,
    pub wrk_error: Option<String>,
    pub driver_vs_wrk: Option<f64>,
    /// Why the ratios to the ceiling are not given: the driver was the limit.
    pub ratio_refused: Option<String>,
    /// `fanout` with a ceiling: hearth's last-poll p50 ÷ the ceiling's.
    pub fanout_ratio: Option<f64>,
    pub settings: Vec<(String, String)>,
    pub metrics_url: Option<String>,
    /// `/metrics` series that changed between the scrapes before and after the run.
    pub metrics: Vec<MetricDelta>,
    pub series: Vec<OpSeries>,
    pub capacity: Option<Capacity>,
    pub total_requests: u64,
    pub total_errors: u64,
    pub error_rate_percent: f64,
    /// The highest p99 of the operations that are not held.
    pub worst_p99_ms: f64,
    pub max_p99_ms: f64,
    pub max_error_rate_percent: f64,
    pub passed: bool,
    pub failures: Vec<String>,
}

fn ms(micros: u64) -> f64 {
    micros as f64 / 1000.0
}

/// An operation's figures over `measured`.
pub fn op_report(op: &str, s: &OpStats, measured: Duration) -> OpReport {
    let mut r = figures(op, &s.hist, s.count, measured.as_secs_f64());
    r.errors = s.error_count();
    r.errors_by_code = s.errors.clone();
    r.held = s.held;
    r
}

/// The figures of a histogram of `count` answers over `secs` seconds.
fn figures(op: &str, hist: &Histogram<u64>, count: u64, secs: f64) -> OpReport {
    let q = |p: f64| ms(hist.value_at_quantile(p));
    let mut distribution = Vec::new();
    for k in 0..=60 {
        let p = 1.0 - 10f64.powf(-(k as f64) / 10.0);
        // A percentile needs about 1 ÷ (1 − p) answers to mean anything.
        if k > 0 && 10f64.powf(k as f64 / 10.0) > count as f64 {
            break;
        }
        distribution.push((100.0 * p, q(p)));
    }
    OpReport {
        op: op.to_owned(),
        count,
        errors: 0,
        errors_by_code: BTreeMap::new(),
        req_per_s: count as f64 / secs.max(1e-9),
        mean_ms: hist.mean() / 1000.0,
        p50_ms: q(0.5),
        p90_ms: q(0.9),
        p99_ms: q(0.99),
        p999_ms: q(0.999),
        max_ms: ms(hist.max()),
        held: false,
        throughput_vs_ceiling: None,
        p50_vs_ceiling: None,
        distribution,
        recorded: hist
            .iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect(),
    }
}

/// One report of the runs of several drivers at once (`hearth load --merge`): each
/// driver a process of its own, for as many users as its open-file limit holds, each
/// against its realm. Answers, errors and rates add up; latencies are the merged
/// histograms' (exact to the histograms' precision); users and the drivers' threads
/// and CPU add up; the thresholds are the first report's, judged on the sum.
pub fn merge(reports: Vec<Report>) -> Result<Report, String> {
    let first = reports.first().ok_or("--merge needs at least one report")?;
    let mut out = Report {
        scenario: first.scenario.clone(),
        target: reports
            .iter()
            .map(|r| r.target.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        users: reports.iter().map(|r| r.users).sum(),
        pacing: first.pacing.clone(),
        duration_s: reports.iter().map(|r| r.duration_s).fold(0.0, f64::max),
        ops: Vec::new(),
        ceiling: None,
        driver_threads: reports.iter().map(|r| r.driver_threads).sum(),
        driver_cpu_s: reports.iter().map(|r| r.driver_cpu_s).sum(),
        driver_cpu_percent_of_core: None,
        process_cpu_s: reports.iter().map(|r| r.process_cpu_s).sum(),
        phases: Vec::new(),
        wrk: None,
        wrk_error: None,
        driver_vs_wrk: None,
        ratio_refused: None,
        fanout_ratio: None,
        settings: vec![("merged reports".to_owned(), reports.len().to_string())],
        metrics_url: None,
        metrics: Vec::new(),
        series: Vec::new(),
        capacity: None,
        total_requests: 0,
        total_errors: 0,
        error_rate_percent: 0.0,
        worst_p99_ms: 0.0,
        max_p99_ms: first.max_p99_ms,
        max_error_rate_percent: first.max_error_rate_percent,
        passed: false,
        failures: Vec::new(),
    };
    out.settings.extend(first.settings.iter().cloned());
    if let Some(other) = reports.iter().find(|r| r.scenario != first.scenario) {
        return Err(format!(
            "reports of different scenarios ({} and {}) do not add up",
            first.scenario, other.scenario
        ));
    }
    let mut names: Vec<(String, bool)> = Vec::new();
    for op in reports.iter().flat_map(|r| &r.ops) {
        if !names.iter().any(|(n, _)| *n == op.op) {
            names.push((op.op.clone(), op.held));
        }
    }
    for (name, held) in names {
        let mut hist =
            Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).map_err(|e| e.to_string())?;
        let (mut count, mut errors, mut rate) = (0, 0, 0.0);
        let mut by_code = BTreeMap::new();
        for op in reports.iter().flat_map(|r| &r.ops).filter(|o| o.op == name) {
            if op.recorded.is_empty() && op.count > 0 {
                return Err(format!(
                    "a report's `{name}` has no histogram (written by an older hearth load)"
                ));
            }
            for (value, n) in &op.recorded {
                hist.record_n(*value, *n).map_err(|e| e.to_string())?;
            }
            count += op.count;
            errors += op.errors;
            rate += op.req_per_s;
            for (code, n) in &op.errors_by_code {
                *by_code.entry(code.clone()).or_insert(0) += n;
            }
        }
        let mut op = figures(&name, &hist, count, out.duration_s);
        op.req_per_s = rate;
        op.errors = errors;
        op.errors_by_code = by_code;
        op.held = held;
        out.ops.push(op);
    }
    out.finish();
    Ok(out)
}

/// The share of its threads' time the driver's runtime may be busy before it counts as the
/// limit.
pub const DRIVER_BOUND_PERCENT: f64 = 90.0;
/// The share of wrk's rate against the ceiling the driver must reach.
pub const MIN_DRIVER_VS_WRK: f64 = 0.8;

impl Report {
    /// Fills in the ratios to the ceiling, the totals and the verdict.
    pub fn finish(&mut self) {
        let mut bound = Vec::new();
        for p in &self.phases {
            if p.driver_busy_percent >= DRIVER_BOUND_PERCENT {
                bound.push(format!(
                    "in the {} phase the driver's {} thread(s) were busy {:.0} % of the time",
                    p.phase, self.driver_threads, p.driver_busy_percent
                ));
            }
        }
        if let (Some(w), Some(c)) = (&self.wrk, &self.ceiling) {
            let share = c.req_per_s / w.req_per_s.max(1e-9);
            self.driver_vs_wrk = Some(share);
            if share < MIN_DRIVER_VS_WRK {
                bound.push(format!(
                    "against the ceiling the driver reached {:.0} req/s, {share:.2}× wrk's {:.0} (under {MIN_DRIVER_VS_WRK}×)",
                    c.req_per_s, w.req_per_s
                ));
            }
        }
        self.ratio_refused = (!bound.is_empty()).then(|| bound.join("; "));
        if let (Some(c), None) = (&self.ceiling, &self.ratio_refused) {
            if c.op.starts_with("ceiling: fan-out") {
                for op in &mut self.ops {
                    if op.op == super::scenarios::FANOUT_LAST {
                        let r = op.p50_ms / c.p50_ms.max(1e-9);
                        op.p50_vs_ceiling = Some(r);
                        self.fanout_ratio = Some(r);
                    }
                }
            } else {
                for op in &mut self.ops {
                    op.throughput_vs_ceiling = Some(op.req_per_s / c.req_per_s.max(1e-9));
                    op.p50_vs_ceiling = Some(op.p50_ms / c.p50_ms.max(1e-9));
                }
            }
        }
        if let Some(cap) = &self.capacity {
            self.ops = cap.figure_ops();
        }
        self.total_requests = self.ops.iter().map(|o| o.count).sum();
        self.total_errors = self.ops.iter().map(|o| o.errors).sum();
        self.error_rate_percent =
            100.0 * self.total_errors as f64 / (self.total_requests.max(1)) as f64;
        self.worst_p99_ms = self
            .ops
            .iter()
            .filter(|o| !o.held)
            .map(|o| o.p99_ms)
            .fold(0.0, f64::max);
        self.failures.clear();
        if let Some(cap) = &self.capacity {
            // The run goes on until a step fails: only no healthy step at all fails it.
            if cap.healthy_users.is_none() {
                self.failures
                    .push("not even the first step was healthy".to_owned());
            }
            self.passed = self.failures.is_empty();
            return;
        }
        if self.total_requests == 0 {
            self.failures.push("no request was answered".into());
        }
        for op in self.ops.iter().filter(|o| !o.held) {
            if op.p99_ms > self.max_p99_ms {
                self.failures.push(format!(
                    "{}: p99 {:.1} ms over the {:.1} ms limit",
                    op.op, op.p99_ms, self.max_p99_ms
                ));
            }
        }
        if self.error_rate_percent > self.max_error_rate_percent {
            self.failures.push(format!(
                "error rate {:.4} % over the {:.4} % limit",
                self.error_rate_percent, self.max_error_rate_percent
            ));
        }
        self.passed = self.failures.is_empty();
    }

    /// The report as a text table.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "\nhearth load: scenario {}, {} users, {}, {:.1} s measured, target {}\n",
            self.scenario, self.users, self.pacing, self.duration_s, self.target
        );
        let ratios = self
            .ops
            .iter()
            .any(|o| o.throughput_vs_ceiling.is_some() || o.p50_vs_ceiling.is_some());
        let _ = write!(
            out,
            "{:<28} {:>9} {:>7} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "operation",
            "count",
            "errors",
            "req/s",
            "p50 ms",
            "p90 ms",
            "p99 ms",
            "p99.9 ms",
            "max ms"
        );
        if ratios {
            let _ = write!(out, " {:>10} {:>9}", "req/s ×c", "p50 ×c");
        }
        out.push('\n');
        let rows = self.ops.iter().chain(self.ceiling.iter());
        for o in rows {
            let name = if o.held {
                format!("{} [held]", o.op)
            } else {
                o.op.clone()
            };
            let _ = write!(
                out,
                "{:<28} {:>9} {:>7} {:>10.1} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>9.2}",
                name,
                o.count,
                o.errors,
                o.req_per_s,
                o.p50_ms,
                o.p90_ms,
                o.p99_ms,
                o.p999_ms,
                o.max_ms
            );
            match (o.throughput_vs_ceiling, o.p50_vs_ceiling) {
                (Some(t), Some(p)) => {
                    let _ = write!(out, " {t:>10.3} {p:>9.2}");
                }
                (None, Some(p)) => {
                    let _ = write!(out, " {:>10} {p:>9.2}", "");
                }
                _ => {}
            }
            out.push('\n');
        }
        for o in &self.ops {
            for (code, n) in &o.errors_by_code {
                let _ = writeln!(out, "  errors {}: {code} × {n}", o.op);
            }
        }
        if ratios {
            let _ = writeln!(
                out,
                "\n×c: ratio to the ceiling (a minimal actix-web server in its own process answering Zulip's success body, same driver, same pacing)"
            );
        }
        if let Some(r) = self.fanout_ratio {
            let _ = writeln!(
                out,
                "fan-out: hearth's last poll p50 is {r:.2}× the ceiling's (goal ≤ 2×: {})",
                if r <= 2.0 { "met" } else { "missed" }
            );
        }
        if let Some(why) = &self.ratio_refused {
            let _ = writeln!(
                out,
                "\nratios to the ceiling WITHHELD: the driver, not the server, was the limit ({why})"
            );
        }
        if let Some(w) = &self.wrk {
            let _ = write!(out, "\nwrk against the ceiling: {:.0} req/s", w.req_per_s);
            if let Some(share) = self.driver_vs_wrk {
                let _ = write!(out, "; the driver reached {share:.2}× of it");
            }
            let _ = writeln!(out, " ({})", w.command);
        }
        if let Some(e) = &self.wrk_error {
            let _ = writeln!(out, "\nwrk not measured: {e}");
        }
        if let (Some(d), Some(pct)) = (self.driver_cpu_s, self.driver_cpu_percent_of_core) {
            let _ = write!(out, "\ndriver CPU: {d:.2} s ({pct:.0} % of one core)");
            if let Some(p) = self.process_cpu_s {
                let _ = write!(out, "; whole process {p:.2} s");
            }
            out.push('\n');
        }
        for p in &self.phases {
            if let (Some(c), Some(pct)) = (p.driver_cpu_s, p.driver_cpu_percent_of_threads) {
                let _ = write!(
                    out,
                    "  {} phase: driver {c:.2} s CPU in {:.1} s ({pct:.0} % of its {} thread(s)), threads busy {:.0} % of the time, {} connections",
                    p.phase, p.wall_s, self.driver_threads, p.driver_busy_percent, p.connections_opened
                );
                if let Some(cc) = p.ceiling_cpu_s {
                    let _ = write!(out, "; ceiling process {cc:.2} s CPU");
                }
                out.push('\n');
            }
        }
        if let Some(cap) = &self.capacity {
            let _ = writeln!(
                out,
                "\n{:>7} {:>9} {:>7} {:>9} {:>9} {:>9}  verdict",
                "users", "requests", "errors", "req/s", "mean ms", "p99 ms"
            );
            for s in &cap.steps {
                let _ = writeln!(
                    out,
                    "{:>7} {:>9} {:>7} {:>9.1} {:>9.2} {:>9.2}  {}",
                    s.users,
                    s.requests,
                    s.errors,
                    s.req_per_s,
                    s.mean_ms,
                    s.p99_ms,
                    if s.healthy {
                        "healthy".to_owned()
                    } else {
                        s.failures.join("; ")
                    }
                );
            }
            match cap.healthy_users {
                Some(n) if cap.reached_max => {
                    let _ = writeln!(out, "capacity: at least {n} users (every user added was served healthily; add more)");
                }
                Some(n) => {
                    let _ = writeln!(out, "capacity: {n} users (the largest healthy step: mean < 100 ms, p99 < 2 s, errors and timeouts < 0.025 %)");
                }
                None => {
                    let _ = writeln!(
                        out,
                        "capacity: under {} users",
                        cap.steps.first().map_or(0, |s| s.users)
                    );
                }
            }
        }
        let _ = writeln!(
            out,
            "\nrequests {}, errors {} ({:.4} %, limit {:.4} %); worst p99 {:.2} ms (limit {:.1} ms)",
            self.total_requests,
            self.total_errors,
            self.error_rate_percent,
            self.max_error_rate_percent,
            self.worst_p99_ms,
            self.max_p99_ms
        );
        if self.passed {
            let _ = writeln!(out, "PASS");
        } else {
            for f in &self.failures {
                let _ = writeln!(out, "FAIL: {f}");
            }
        }
        out
    }
}
