//! The live screen of `tpuport top` (ratatui on crossterm): one panel per server with a row
//! per model, histograms, device memory, libtpu's figures, and the alarms. `q`, Esc or Ctrl-C
//! quits.

use std::time::{Duration, Instant};

use ratatui::Frame;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Row, Table};
use tpuport_report::top::{bars, bytes, seconds};

use crate::commands::top::{Round, Session};

/// Runs the view until `q` or `duration`; returns whether any alarm was raised.
pub(crate) fn run(s: &mut Session, interval: f64, duration: Option<f64>) -> anyhow::Result<bool> {
    let mut terminal = ratatui::init();
    let started = Instant::now();
    let result = (|| -> anyhow::Result<bool> {
        let mut seen = false;
        loop {
            let r = s.round();
            seen |= r.views.iter().any(|v| !v.alarms.is_empty());
            terminal.draw(|f| draw(f, &r, started.elapsed().as_secs_f64()))?;
            let next = Instant::now() + Duration::from_secs_f64(interval);
            loop {
                let now = Instant::now();
                if now >= next {
                    break;
                }
                if event::poll(next - now)?
                    && let Event::Key(k) = event::read()?
                    && k.kind == KeyEventKind::Press
                    && (matches!(k.code, KeyCode::Char('q') | KeyCode::Esc)
                        || (k.code == KeyCode::Char('c')
                            && k.modifiers.contains(KeyModifiers::CONTROL)))
                {
                    return Ok(seen);
                }
            }
            if duration.is_some_and(|d| started.elapsed().as_secs_f64() >= d) {
                return Ok(seen);
            }
        }
    })();
    ratatui::restore();
    result
}

fn draw(f: &mut Frame<'_>, r: &Round, elapsed: f64) {
    let alarms: Vec<Line<'_>> = r
        .views
        .iter()
        .flat_map(|v| &v.alarms)
        .map(|a| {
            Line::from(vec![
                Span::styled(
                    format!("{} ", a.rule),
                    Style::default().fg(Color::Red).add_modifier(Modifier::BOLD),
                ),
                Span::raw(a.message.clone()),
            ])
        })
        .collect();
    let alarm_height = u16::try_from(alarms.len().max(1) + 2).unwrap_or(u16::MAX).min(10);
    let n = r.views.len().max(1);
    let mut constraints = vec![Constraint::Length(1)];
    constraints.extend((0..n).map(|_| Constraint::Fill(1)));
    constraints.push(Constraint::Length(if r.libtpu.is_some() || r.libtpu_error.is_some() {
        3
    } else {
        0
    }));
    constraints.push(Constraint::Length(alarm_height));
    let areas = Layout::vertical(constraints).split(f.area());
    let header = format!("tpuport top  {} target(s)  {:.0} s  q quits", r.views.len(), elapsed);
    f.render_widget(
        Paragraph::new(header).style(Style::default().add_modifier(Modifier::BOLD)),
        areas[0],
    );
    for (i, v) in r.views.iter().enumerate() {
        let area = areas[1 + i];
        let title = format!(
            " {}  ready {}  compiles after ready {} ",
            v.url,
            v.server_ready.map_or("-".to_owned(), |x| x.to_string()),
            v.compiles_after_ready
        );
        let block = Block::default().borders(Borders::ALL).title(title);
        if let Some(e) = &v.error {
            f.render_widget(Paragraph::new(format!("scrape failed: {e}")).block(block), area);
            continue;
        }
        let inner = block.inner(area);
        f.render_widget(block, area);
        let rows_h = u16::try_from(v.models.len() + 1).unwrap_or(u16::MAX);
        let parts =
            Layout::vertical([Constraint::Length(rows_h), Constraint::Fill(1)]).split(inner);
        let rows = v.models.iter().map(|m| {
            let rej: f64 = m.rejections.values().sum();
            let drift: f64 = m.shape_drift.values().sum();
            Row::new(vec![
                m.model.clone(),
                m.requests_per_s.map_or("-".to_owned(), |x| format!("{x:.1}")),
                seconds(m.latency.p50),
                seconds(m.latency.p90),
                seconds(m.latency.p99),
                format!("{}", m.queue_depth),
                format!("{}", m.inflight),
                format!("{rej}"),
                format!("{drift}"),
            ])
        });
        let widths = [
            Constraint::Fill(2),
            Constraint::Length(8),
            Constraint::Length(9),
            Constraint::Length(9),
            Constraint::Length(9),
            Constraint::Length(6),
            Constraint::Length(8),
            Constraint::Length(9),
            Constraint::Length(6),
        ];
        let head = Row::new(vec![
            "model", "req/s", "p50", "p90", "p99", "queue", "inflight", "rejected", "drift",
        ])
        .style(Style::default().add_modifier(Modifier::BOLD));
        f.render_widget(Table::new(rows, widths).header(head), parts[0]);
        let mut lines = Vec::new();
        for m in &v.models {
            lines.push(Line::from(format!("{} batch size  {}", m.model, bars(&m.batch_size))));
            lines.push(Line::from(format!("{} padding     {}", m.model, bars(&m.padding_ratio))));
            if !m.rejections.is_empty() {
                let t: Vec<String> = m.rejections.iter().map(|(k, x)| format!("{k} {x}")).collect();
                lines.push(Line::from(format!("{} rejections  {}", m.model, t.join(", "))));
            }
        }
        for d in &v.device_memory {
            lines.push(Line::from(format!("device {} {} {}", d.device, d.kind, bytes(d.bytes))));
        }
        f.render_widget(Paragraph::new(lines), parts[1]);
    }
    let tpu_area = areas[1 + n];
    if let Some(l) = &r.libtpu {
        let text: Vec<String> = l
            .devices
            .iter()
            .map(|(id, d)| {
                format!(
                    "{id}: HBM {}/{} duty {}",
                    d.hbm_used.map_or("-".to_owned(), bytes),
                    d.hbm_total.map_or("-".to_owned(), bytes),
                    d.duty_cycle_percent.map_or("-".to_owned(), |p| format!("{p:.0}%"))
                )
            })
            .collect();
        f.render_widget(
            Paragraph::new(text.join("  "))
                .block(Block::default().borders(Borders::ALL).title(" libtpu ")),
            tpu_area,
        );
    } else if let Some(e) = &r.libtpu_error {
        f.render_widget(
            Paragraph::new(e.clone())
                .block(Block::default().borders(Borders::ALL).title(" libtpu ")),
            tpu_area,
        );
    }
    let alarm_block = Block::default().borders(Borders::ALL).title(" alarms ");
    let body = if alarms.is_empty() { vec![Line::from("none")] } else { alarms };
    f.render_widget(Paragraph::new(body).block(alarm_block), areas[2 + n]);
}
