"use strict";
const GREEN = "#2ecc40", YELLOW = "#ffdc00", RED = "#ff4136", CYAN = "#39cccc", DIM = "#6c7680", TEXT = "#d8dde3";
const params = new URLSearchParams(location.search);
const canvas = document.getElementById("screen"), live = document.getElementById("live");
const g = canvas.getContext("2d");
let display = null, update = null, selected = Math.max(0, (parseInt(params.get("ch") || "1", 10) || 1) - 1);
let connected = false, retry = 1000, lastNote = null, held = [], heldAt = [];
let meterRows = [];
// The loudness view (key l, ?view=loudness): each programme's history over `minutes`
// (+/-, ?minutes=), on EBU Tech 3341's +9 or +18 scale (s, ?scale=18).
const WINDOWS = [1, 2, 5, 10, 30, 60];
const VIEWS = ["meters", "loudness", "goniometer", "spectrogram", "bits"];
let view = VIEWS.includes(params.get("view")) ? params.get("view") : "meters";
let minutes = WINDOWS.includes(+params.get("minutes")) ? +params.get("minutes") : 10;
let scale18 = params.get("scale") === "18";
// Per programme name: points {t (performance.now ms), m (max momentary), s (short-term)}, at
// most one per 250 ms (at most 14,400 an hour), the hour before from the server's history message.
let history = {}, historyPoints = 0;

// The pictures (a binary frame after each update, and the spectrogram's recent minutes after
// the hello; the server's PictureFrame): each pair's latest goniometer points, and per channel
// a ring of spectrogram columns at the live column period (history columns repeated to it).
// The goniometer pair (g view: Tab / arrows, ?pair=N), the spectrogram's span (+/-, ?span=
// seconds) and colours (c, ?palette=).
let gonio = null, pair = Math.max(0, (parseInt(params.get("pair") || "1", 10) || 1) - 1);
let spectro = null, goniometerBox = null, spectrogramBox = null, phosphor = null;
// Each programme's short-term loudness histogram (% of short-term windows per bin, by name),
// drawn beside its history graph in the loudness view.
let histograms = {}, histogramBins = { from: -70, width: 1 }, histogramBoxes = {};
// The bit meter (b): per channel the bits in use, its word, DC offset, constant.
let bitmeter = [], bitRows = [];
const SPANS = [10, 30, 60, 120, 300], PALETTES = ["heat", "grey", "green"];
let span = SPANS.includes(+params.get("span")) ? +params.get("span") : 60;
let palette = PALETTES.includes(params.get("palette")) ? params.get("palette") : "heat";

function takePictures(buffer) {
  const v = new DataView(buffer);
  if (v.byteLength < 4 || v.getUint32(0, true) !== 0x3150564A) return;  // "JVP1"
  let at = 4;
  while (at + 5 <= v.byteLength) {
    const type = v.getUint8(at), length = v.getUint32(at + 1, true), body = at + 5;
    if (body + length > v.byteLength) return;
    if (type === 1 && length >= 4) {
      const pairs = v.getUint16(body, true), points = v.getUint16(body + 2, true);
      const g1 = { pairs: pairs, points: points, scale: [], data: [] };
      let p0 = body + 4;
      g1.names = []; g1.inputs = []; g1.levels = [];
      for (let p = 0; p < pairs && p0 + 5 <= body + length; p++) {
        const left = v.getUint16(p0, true), right = v.getUint16(p0 + 2, true), nameLength = v.getUint8(p0 + 4);
        p0 += 5;
        if (p0 + nameLength + 16 + 2 * points > body + length) break;
        g1.names.push(new TextDecoder().decode(new Uint8Array(buffer, p0, nameLength)));
        g1.inputs.push([left, right]);
        p0 += nameLength;
        g1.levels.push({ balance: v.getFloat32(p0, true), mid: v.getFloat32(p0 + 4, true), side: v.getFloat32(p0 + 8, true) });
        p0 += 12;
        g1.scale.push(v.getFloat32(p0, true));
        g1.data.push(new Int8Array(buffer, p0 + 4, 2 * points));
        p0 += 4 + 2 * points;
      }
      gonio = g1;
    } else if (type === 2 && length >= 10) {
      const channels = v.getUint16(body, true), bars = v.getUint16(body + 2, true);
      const columns = v.getUint16(body + 4, true), seconds = v.getFloat32(body + 6, true);
      const cells = new Uint8Array(buffer, body + 10, Math.min(length - 10, columns * channels * bars));
      addColumns(channels, bars, columns, seconds, cells);
    } else if (type === 3 && length >= 12) {
      const programmes = v.getUint16(body, true), bins = v.getUint16(body + 2, true);
      histogramBins = { from: v.getFloat32(body + 4, true), width: v.getFloat32(body + 8, true) };
      let p0 = body + 12;
      const next = {};
      for (let p = 0; p < programmes && p0 < body + length; p++) {
        const nameLength = v.getUint8(p0);
        if (p0 + 1 + nameLength + 2 * bins > body + length) break;
        const name = new TextDecoder().decode(new Uint8Array(buffer, p0 + 1, nameLength));
        p0 += 1 + nameLength;
        const pct = new Float32Array(bins);
        for (let k = 0; k < bins; k++) pct[k] = v.getUint16(p0 + 2 * k, true) / 100;
        next[name] = pct;
        p0 += 2 * bins;
      }
      histograms = next;
    } else if (type === 4 && length >= 2) {
      const channels = v.getUint16(body, true), next = [];
      for (let c = 0; c < channels && body + 2 + 8 * (c + 1) <= body + length; c++) {
        const o = body + 2 + 8 * c;
        next.push({ depth: v.getUint8(o), headroom: v.getUint8(o + 1), quantised: v.getUint8(o + 2),
          constant: (v.getUint8(o + 3) & 1) === 1, dc: v.getFloat32(o + 4, true) });
      }
      bitmeter = next;
    }
    at = body + length;
  }
}

// Adds spectrogram columns (oldest first) to the ring: live ones one each; history ones
// (coarser) each repeated to fill its time at the live period.
function addColumns(channels, bars, columns, seconds, cells) {
  const period = 1 / (display ? display.rate_hz : 20);
  const cap = Math.round(SPANS[SPANS.length - 1] / period);
  if (!spectro || spectro.channels !== channels || spectro.bars !== bars || spectro.cap !== cap) {
    spectro = { channels: channels, bars: bars, cap: cap, period: period, cells: new Uint8Array(cap * channels * bars), next: 0, count: 0 };
  }
  const size = channels * bars, repeat = Math.max(1, Math.round(seconds / period));
  for (let k = 0; k < columns; k++) {
    const column = cells.subarray(k * size, (k + 1) * size);
    if (column.length < size) break;
    for (let r = 0; r < repeat; r++) {
      spectro.cells.set(column, spectro.next * size);
      spectro.next = (spectro.next + 1) % spectro.cap;
      spectro.count = Math.min(spectro.count + 1, spectro.cap);
    }
  }
}

// Channel c's bars in the column `back` columns before the newest (0: the newest), or null.
function spectrogramColumn(c, back) {
  if (!spectro || back >= spectro.count || c >= spectro.channels) return null;
  const j = (spectro.next - 1 - back + spectro.cap) % spectro.cap, size = spectro.channels * spectro.bars;
  return spectro.cells.subarray(j * size + c * spectro.bars, j * size + (c + 1) * spectro.bars);
}

function connect() {
  const ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws");
  ws.binaryType = "arraybuffer";
  ws.onopen = () => { connected = true; retry = 1000; draw(); };
  ws.onmessage = (event) => {
    if (typeof event.data !== "string") { takePictures(event.data); if (view !== "meters" && view !== "loudness") draw(); return; }
    const message = JSON.parse(event.data);
    if (message.display) { display = message.display; }
    else if (message.history) { takeHistory(message.history); }
    else { update = message; remember(); record(); }
    draw();
  };
  ws.onclose = () => {
    connected = false; draw();
    setTimeout(connect, retry); retry = Math.min(5000, retry * 2);
  };
  ws.onerror = () => {};
}

// The bar's own held maximum, for meters whose hold is not the sample peak.
function remember() {
  const now = performance.now();
  update.channels.forEach((c, i) => {
    const v = c.meter || 0;
    if (held[i] === undefined || v >= held[i] || now - heldAt[i] > (display ? display.hold_s : 1.5) * 1000) {
      held[i] = v; heldAt[i] = now;
    }
  });
}

// The server's past hour (sent once after the hello): ages become times on this clock.
function takeHistory(h) {
  const now = performance.now();
  history = {};
  for (const p of h.programmes) {
    // /history names the default programme as it is shown; the page keys it "".
    history[p.name === shownName("") ? "" : p.name] = p.age_s.map((age, i) => ({
      t: now - age * 1000,
      m: p.momentary_lufs[i] === null ? -120 : p.momentary_lufs[i],
      s: p.short_term_lufs[i] === null ? -120 : p.short_term_lufs[i] }));
  }
  historyPoints = h.programmes.reduce((n, p) => n + p.age_s.length, 0);
  if (params.get("log")) console.log("jackvu history " + historyPoints + " points, oldest "
    + Math.max(0, ...h.programmes.map(p => p.age_s.length ? p.age_s[0] : 0)).toFixed(1) + " s");
}

// Every programme of an update as [name, readings]: the default one ("", as the pictures'
// frames name it too) or the named ones.
function programmeList(u) {
  const named = u.programmes ? Object.entries(u.programmes) : [];
  return named.length ? named : u.loudness ? [["", u.loudness]] : [];
}

// The name a programme is shown by: its own, or the default programme's (the hello says it:
// the same as /history, /metrics, the reports and the terminal show).
function shownName(name) {
  return name || (display && display.default_programme) || "programme";
}

// Adds the update's readings to the history (one point per 250 ms, the largest momentary
// loudness in it), keeping an hour.
function record() {
  const now = performance.now();
  for (const [name, p] of programmeList(update)) {
    const h = history[name] || (history[name] = []);
    const last = h[h.length - 1];
    const m = p.momentary_lufs === null ? -120 : p.momentary_lufs, st = p.short_term_lufs === null ? -120 : p.short_term_lufs;
    if (last && now - last.t < 250) { last.m = Math.max(last.m, m); last.s = st; continue; }
    h.push({ t: now, m: m, s: st });
    while (h.length && now - h[0].t > 3600 * 1000) h.shift();
  }
}

function fixed(x, d) { return x === null || x === undefined ? "-" : Number(x).toFixed(d); }
function lufs(x) { return x === null || x <= -70 ? "-inf" : x.toFixed(1); }
function zone(v, m) { return v >= m.red_from ? RED : v >= m.yellow_from ? YELLOW : GREEN; }
function hz(f) { return f >= 1000 ? (f / 1000).toFixed(2) + " kHz" : f.toFixed(1) + " Hz"; }

function resize() {
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.round(canvas.clientWidth * dpr);
  canvas.height = Math.round(canvas.clientHeight * dpr);
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  draw();
}

function text(s, x, y, size, color, align, weight) {
  g.font = (weight || "normal") + " " + size + "px " + '"DejaVu Sans", system-ui, sans-serif';
  g.fillStyle = color || TEXT; g.textAlign = align || "left"; g.textBaseline = "alphabetic";
  g.fillText(s, x, y);
}

// A programme's state against its target, short, and its colour.
function stateText(s) {
  return { "within": "OK", "above": "HIGH", "below": "LOW", "true-peak-over": "TP OVER", "short-term-over": "ST OVER" }[s] || "…";
}
function stateColor(s) { return s === "within" ? GREEN : s === "pending" ? DIM : s === "below" ? YELLOW : RED; }

function draw() {
  drawView();
  drawAlarmBanner();
}

// While any alarm is active (--alarm): a red band under the title naming each one, over
// whatever the view drew there; the page's title says so too (a background tab shows it).
function drawAlarmBanner() {
  const list = update && update.alarms && update.alarms.list ? update.alarms.list : [];
  const mark = list.length > 0 ? "ALARM · " : "";
  const base = document.title.replace(/^ALARM · /, "");
  if (document.title !== mark + base) document.title = mark + base;
  if (list.length === 0) return;
  const W = canvas.clientWidth, H = canvas.clientHeight;
  const u = H > W ? Math.max(6, Math.min(W / 30, H / 52)) : Math.max(6, Math.min(W / 64, H / 36));
  g.fillStyle = RED; g.fillRect(0, 2 * u, W, 2 * u);
  let line = "ALARM   " + list.join("  ·  ");
  g.font = "bold " + 1.1 * u + 'px "DejaVu Sans", system-ui, sans-serif';
  while (line.length > 8 && g.measureText(line).width > W - 2 * u) line = line.slice(0, -2) + "…";
  text(line, u, 3.4 * u, 1.1 * u, "#fff", "left", "bold");
}

function drawView() {
  const W = canvas.clientWidth, H = canvas.clientHeight;
  g.clearRect(0, 0, W, H);
  // The unit everything scales with: a landscape screen is 64 units wide and 36 high; a
  // portrait one (a phone) is 30 wide, with the loudness block under the pitch.
  const portrait = H > W;
  const u = portrait ? Math.max(6, Math.min(W / 30, H / 52)) : Math.max(6, Math.min(W / 64, H / 36));
  const pad = u;
  // Title bar.
  g.fillStyle = "#1d2126"; g.fillRect(0, 0, W, 2 * u);
  let title = display ? display.client : "jackvu";
  // Stalled: connected, but the server runs no process cycles; the readings are frozen.
  const stalled = !!(update && update.status && update.status.server_connected !== false
    && update.status.server_responding === false);
  if (update && update.status && update.status.server_connected === false) {
    title += "   NO JACK SERVER: waiting for it";
  } else if (stalled) {
    g.fillStyle = "#ff4136"; g.fillRect(0, 0, W, 2 * u);
    title += "   JACK SERVER STALLED: no process cycles, readings frozen";
  } else if (update) {
    const s = update.status || {};
    title += "   " + update.sample_rate_hz + " Hz   " + (s.buffer_frames || "-") + " frames   xruns " + s.xruns
      + "   overruns " + s.overruns + "   skipped " + s.skipped_updates;
  }
  const state = connected ? "connected" : "reconnecting …";
  g.font = "normal " + 0.9 * u + 'px "DejaVu Sans", system-ui, sans-serif';
  const roomy = pad + g.measureText(title).width + g.measureText(state).width + 2 * u < W;
  // On a narrow screen (a phone) the title stops short of the connection dot.
  const room = W - pad - 2.5 * u;
  if (!roomy && g.measureText(title).width > room) {
    while (title.length > 1 && g.measureText(title + "…").width > room) title = title.slice(0, -1);
    title += "…";
  }
  text(title, pad, 1.4 * u, 0.9 * u, TEXT);
  if (roomy) {
    text(state, W - pad, 1.4 * u, 0.9 * u, connected ? GREEN : YELLOW, "right");
  } else {  // a narrow screen: a dot says it
    g.fillStyle = "#1d2126"; g.fillRect(W - 2 * u, 0, 2 * u, 2 * u);
    g.fillStyle = connected ? GREEN : YELLOW; g.beginPath(); g.arc(W - u, u, 0.4 * u, 0, 2 * Math.PI); g.fill();
  }
  if (!display || !update) {
    const waiting = connected ? "waiting for audio …" : "waiting for jackvu …";
    text(waiting, pad, 6 * u, 1.5 * u, DIM);
    if (live.textContent !== waiting) live.textContent = waiting;
    return;
  }
  if (view === "loudness") { drawLoudness(W, H, u, pad, portrait); return; }
  if (view === "goniometer") { drawGoniometer(W, H, u, pad, portrait); return; }
  if (view === "spectrogram") { drawSpectrogram(W, H, u, pad, portrait); return; }
  if (view === "bits") { drawBits(W, H, u, pad, portrait); return; }
  const channels = update.channels, n = channels.length;
  if (selected >= n) selected = 0;
  const ch = channels[selected], m = display.meter;

  // The note, large, with frequency, cents and confidence; loudness on the right.
  const top = 3 * u, noteSize = (portrait ? 5.5 : 7) * u;
  const note = ch.note || "–";
  text(note, pad, top + noteSize * 0.85, noteSize, ch.note ? CYAN : DIM, "left", "bold");
  g.font = "bold " + noteSize + "px sans-serif";
  const nx = pad + Math.max(g.measureText("C#4").width, g.measureText(note).width) + 2 * u;
  text("Input " + (selected + 1) + "  pitch", nx, top + 1.2 * u, 0.9 * u, DIM);
  if (ch.note) {
    text(hz(ch.pitch_hz), nx, top + 3.4 * u, 2 * u, TEXT, "left", "bold");
    const cents = ch.cents || 0;
    text((cents >= 0 ? "+" : "") + cents.toFixed(0) + " cents", nx, top + 5.2 * u, 1.1 * u, TEXT);
    // Tuning needle, −50 … +50 cents.
    const nxx = nx + 7 * u, nw = Math.max(4 * u, Math.min(12 * u, W - pad - nxx)), ny = top + 4.8 * u;
    g.fillStyle = DIM; g.fillRect(nxx, ny, nw, 0.15 * u); g.fillRect(nxx + nw / 2 - 0.1 * u, ny - 0.6 * u, 0.2 * u, 1.35 * u);
    const a = Math.abs(cents);
    g.fillStyle = a <= 5 ? GREEN : a <= 15 ? YELLOW : RED;
    g.fillRect(nxx + nw / 2 + Math.max(-1, Math.min(1, cents / 50)) * nw / 2 - 0.25 * u, ny - 0.7 * u, 0.5 * u, 1.55 * u);
  } else {
    text("no note", nx, top + 3.4 * u, 2 * u, DIM);
  }
  text("confidence " + fixed(ch.pitch_confidence, 2), nx, top + 6.6 * u, 0.9 * u, DIM);
  // Then the further channel readings the table names (display.extras, scope channel).
  const channelExtras = (display.extras || []).filter(e => e.scope === "channel" && e.key in ch)
    .map(e => "   " + e.label + " " + (ch[e.key] === null ? "-" : fixed(ch[e.key], e.decimals)) + " " + e.unit);
  text("FFT peak " + (ch.peakfreq_note ? hz(ch.peakfreq_hz) + " " + ch.peakfreq_note : "-") + channelExtras.join(""), nx, top + 7.8 * u, 0.9 * u, DIM);
  const l = update.loudness, programmes = update.programmes ? Object.entries(update.programmes) : [];
  const lx = portrait ? pad : W - pad - 17 * u, ly = portrait ? top + 9 * u : top;
  if (programmes.length) {
    // One row per programme (--programme): short-term, integrated, its state.
    text("Programme      S        I LUFS", lx, ly + 1.2 * u, 0.9 * u, DIM);
    const rows = programmes.length <= 6 ? programmes.length : 5;
    programmes.slice(0, rows).forEach(([name, p], i) => {
      const y = ly + (2.6 + 1.25 * i) * u;
      text(name.length > 9 ? name.slice(0, 8) + "…" : name, lx, y, 1.0 * u, TEXT);
      text(lufs(p.short_term_lufs), lx + 9.5 * u, y, 1.0 * u, TEXT, "right");
      text(lufs(p.integrated_lufs), lx + 13.5 * u, y, 1.0 * u, TEXT, "right", "bold");
      if (p.state) text(stateText(p.state), lx + 14 * u, y, 0.8 * u, stateColor(p.state));
    });
    if (rows < programmes.length) text("+" + (programmes.length - rows) + " more", lx, ly + (2.6 + 1.25 * rows) * u, 0.9 * u, DIM);
  } else if (l) {
    text(l.state ? "Target " + l.profile + "  " + stateText(l.state) : "Loudness (EBU R 128)", lx, ly + 1.2 * u, 0.9 * u,
      l.state ? stateColor(l.state) : DIM);
    text("M " + lufs(l.momentary_lufs) + "   S " + lufs(l.short_term_lufs) + " LUFS", lx, ly + 3 * u, 1.2 * u);
    text("I " + lufs(l.integrated_lufs) + " LUFS", lx, ly + 5.2 * u, 1.8 * u, TEXT, "left", "bold");
    // LRA, then the further programme readings the table names (display.extras), by label.
    const extras = (display.extras || []).filter(e => e.scope !== "channel" && e.key in l)
      .map(e => "   " + e.label + " " + (l[e.key] === null ? "-" : fixed(l[e.key], e.decimals)) + " " + e.unit);
    text("LRA " + fixed(l.range_lu, 1) + " LU" + extras.join(""), lx, ly + 6.8 * u, 1.2 * u);
    const tp = Math.max(...channels.map(c => c.max_true_peak_dbtp === null ? -200 : c.max_true_peak_dbtp));
    // A maximum an xrun set is said so, with the clean maximum (JSON: max_true_peak_cause).
    const fault = l.max_true_peak_cause ? "  (" + l.max_true_peak_cause + "; clean " + fixed(l.clean_max_true_peak_dbtp, 1) + ")" : "";
    text("TP max " + (tp > -200 ? tp.toFixed(1) : "-inf") + " dBTP" + fault, lx, ly + 8.4 * u, 1.2 * u, tp >= -1 ? RED : fault ? YELLOW : TEXT);
  }

  // Meters: one bar per channel on the --meter scale, peak hold, reading, clip, note.
  const mTop = (portrait && (l || programmes.length) ? ly : top) + 10 * u, labelW = 2.5 * u, valueW = 12 * u;
  const barX = pad + labelW, barW = W - 2 * pad - labelW - valueW;
  const spectrumMin = 8 * u, bottom = 2.5 * u;
  const rowH = Math.max(0.9 * u, Math.min(2.2 * u, (H - mTop - spectrumMin - 3 * u - bottom) / n));
  meterRows = [];
  const frac = v => Math.max(0, Math.min(1, (v - m.min) / (m.max - m.min)));
  channels.forEach((c, i) => {
    const y = mTop + i * rowH, h = rowH * 0.7;
    meterRows.push([y, y + rowH, i]);
    text(String(i + 1), pad, y + h * 0.85, Math.min(h, 1.1 * u), i === selected ? CYAN : DIM, "left", i === selected ? "bold" : "normal");
    g.fillStyle = "#22272d"; g.fillRect(barX, y, barW, h);
    const x = Math.max(0, Math.min(1, c.meter || 0));
    // Colour zones along the bar.
    const yx = frac(m.yellow_from), rx = frac(m.red_from);
    const segments = [[0, Math.min(x, yx), GREEN], [yx, Math.min(x, rx), YELLOW], [rx, x, RED]];
    for (const [a, b, col] of segments) if (b > a) { g.fillStyle = col; g.fillRect(barX + a * barW, y, (b - a) * barW, h); }
    const hold = m.hold_is_sample_peak ? c.hold : held[i];
    if (hold > 0) {
      const value = m.min + hold * (m.max - m.min);
      g.fillStyle = zone(value, m); g.fillRect(barX + Math.min(hold, 1) * barW - 0.2 * u, y, 0.4 * u, h);
    }
    const reading = x <= 0 && (m.unit.startsWith("dB") || m.unit === "LUFS") ? "-inf" : (m.min + x * (m.max - m.min)).toFixed(1);
    // Silence reads -inf, dim: no zone.
    text(reading, barX + barW + 5 * u, y + h * 0.85, Math.min(h, 1.1 * u), reading === "-inf" ? DIM : zone(m.min + x * (m.max - m.min), m), "right");
    if (c.clips > 0) {
      g.fillStyle = RED; g.fillRect(barX + barW + 5.5 * u, y, 3.2 * u, h);
      text("CLIP", barX + barW + 7.1 * u, y + h * 0.85, Math.min(h, 0.9 * u), "#fff", "center", "bold");
    }
    if (c.note) text(c.note, W - pad, y + h * 0.85, Math.min(h, 1.1 * u), CYAN, "right");
  });
  // The scale.
  const sy = mTop + n * rowH + 0.9 * u;
  let lastEnd = -1e9;
  g.font = 0.8 * u + "px sans-serif";
  for (const mark of m.marks) {
    const label = Number.isInteger(mark) ? String(mark) : mark.toFixed(1);
    const x = barX + frac(mark) * barW, w = g.measureText(label).width;
    if (x - w / 2 <= lastEnd + 0.5 * u) continue;
    text(label, x, sy, 0.8 * u, DIM, "center"); lastEnd = x + w / 2;
  }
  text(m.name + " " + m.unit, barX + barW + 2 * u, sy, 0.8 * u, DIM);

  // Spectrum of the selected channel: bars coloured by height (−80 … 0 dB).
  const sTop = sy + 1.2 * u, sBottom = H - bottom - 1.6 * u, sh = sBottom - sTop;
  const bars = ch.bars || [], sx = barX, sw = barW;
  if (sh > u && bars.length) {
    text("0", sx - 0.5 * u, sTop + 0.8 * u, 0.8 * u, DIM, "right");
    text("-80 dB", sx - 0.5 * u, sBottom, 0.8 * u, DIM, "right");
    text("Spectrum, input " + (selected + 1), sx + sw, sTop + 0.8 * u, 0.8 * u, DIM, "right");
    const bw = sw / bars.length;
    bars.forEach((v, i) => {
      const h = Math.max(0, Math.min(1, v || 0)) * sh;
      if (h <= 0) return;
      const grad = g.createLinearGradient(0, sBottom, 0, sTop);
      grad.addColorStop(0, GREEN); grad.addColorStop(0.6, GREEN); grad.addColorStop(0.6, YELLOW);
      grad.addColorStop(0.8, YELLOW); grad.addColorStop(0.8, RED); grad.addColorStop(1, RED);
      g.fillStyle = grad;
      g.fillRect(sx + i * bw + (bw > 3 ? 1 : 0), sBottom - h, Math.max(1, bw - (bw > 3 ? 2 : 0)), h);
    });
    // Frequency labels at their log positions.
    const fMin = display.bars_from_hz, fMax = Math.min(display.bars_to_hz, update.sample_rate_hz / 2);
    lastEnd = -1e9;
    for (const f of [31.5, 63, 125, 250, 500, 1000, 2000, 4000, 8000, 16000]) {
      if (f < fMin || f > fMax) continue;
      const x = sx + Math.log(f / fMin) / Math.log(fMax / fMin) * sw;
      const label = f >= 1000 ? f / 1000 + "k" : String(f);
      const w = g.measureText(label).width;
      if (x - w / 2 <= lastEnd + 0.5 * u) continue;
      text(label, x, sBottom + 1.1 * u, 0.8 * u, DIM, "center"); lastEnd = x + w / 2;
    }
  }

  // Correlation of the channel pairs, or of each programme's loudspeaker pairs.
  let cx = pad;
  // A channel pair whose inputs are both silent has no phase: a dim dash, not a yellow +0.00.
  const silent = (c) => !c || c.rms_dbfs === null || c.rms_dbfs === undefined || c.rms_dbfs < -90;
  const pairs = (update.correlation || []).map((r, i) =>
    [(2 * i + 1) + "-" + (2 * i + 2), silent(channels[2 * i]) && silent(channels[2 * i + 1]) ? null : r]);
  for (const [name, p] of programmes) {
    for (const [label, r] of Object.entries(p.correlation || {})) pairs.push([name + " " + label, r]);
  }
  if (pairs.length) {
    text("Correlation", cx, H - 0.8 * u, 0.9 * u, DIM);
    cx += 7 * u;
    for (const [name, r] of pairs) {
      const shown = r === null ? 0 : Math.round(r * 100) / 100 + 0;  // + 0: no "-0.00"
      const label = name + " " + (r === null ? "–" : (shown >= 0 ? "+" : "") + shown.toFixed(2));
      g.font = 0.9 * u + "px sans-serif";
      const w = Math.max(7 * u, g.measureText(label).width + u);
      if (cx + w > W) break;
      text(label, cx, H - 0.8 * u, 0.9 * u, r === null ? DIM : shown < 0 ? RED : shown < 0.3 ? YELLOW : GREEN);
      cx += w;
    }
  }
  const hint = "Tab / ← → select input · click a meter · l loudness · g goniometer · w spectrogram · b bits";
  g.font = 0.8 * u + "px sans-serif";
  if (W - pad - g.measureText(hint).width > cx + u) text(hint, W - pad, H - 0.8 * u, 0.8 * u, DIM, "right");

  // For screen readers and scripts.
  const summary = (!connected ? "Reconnecting to jackvu. "
      : update.status && update.status.server_connected === false ? "No JACK server: waiting for it. "
      : update.status && update.status.server_responding === false ? "JACK server stalled: readings frozen. " : "")
    + "Input " + (selected + 1) + ": " + (ch.note || "no note") + (ch.note ? " " + hz(ch.pitch_hz) : "")
    + ", " + m.name + " " + (m.min + (ch.meter || 0) * (m.max - m.min)).toFixed(1) + " " + m.unit
    + (update.alarms && update.alarms.active > 0 ? ". Alarm: " + update.alarms.list.join(", ") : "");
  if (live.textContent !== summary) live.textContent = summary;
  document.title = (ch.note ? ch.note + " — " : "") + (display.client || "jackvu");
  if (params.get("log") && ch.note !== lastNote) console.log("jackvu note " + (ch.note || "-"));
  lastNote = ch.note;
}

// The loudness view: a block per programme: its readings, then its history graph (short-term
// as a line, the max momentary as a faint area, the target band and the scale's marks).
function drawLoudness(W, H, u, pad, portrait) {
  const list = programmeList(update), n = Math.max(1, list.length);
  const range = scale18 ? [-36, 18] : [-18, 9];
  text("Loudness, last " + minutes + " min, EBU +" + (scale18 ? 18 : 9) + " scale (LU against the target)", pad, 3.3 * u, 0.9 * u, DIM);
  const top = 4.2 * u, bottom = H - 2.2 * u, blockH = (bottom - top) / n;
  const size = Math.max(0.7 * u, Math.min(1.1 * u, blockH * 0.22));
  const labelW = 3.2 * size, gx = pad + labelW, gw = W - 2 * pad - labelW;
  const now = performance.now(), span = minutes * 60 * 1000;
  list.forEach(([name, p], i) => {
    const y0 = top + i * blockH;
    // The readings line.
    const label = shownName(name);
    let line = "M " + lufs(p.momentary_lufs) + "  S " + lufs(p.short_term_lufs) + "  I " + lufs(p.integrated_lufs) + " LUFS";
    if (!portrait || W > 500) line += "  LRA " + fixed(p.range_lu, 1) + " LU";
    if (p.max_true_peak_dbtp !== undefined && (!portrait || W > 700)) line += "  TP max " + (p.max_true_peak_dbtp === null ? "-inf" : fixed(p.max_true_peak_dbtp, 1)) + " dBTP";
    text(label, pad, y0 + size, size, TEXT, "left", "bold");
    g.font = "bold " + size + 'px "DejaVu Sans", system-ui, sans-serif';
    const lx = pad + Math.max(6 * size, g.measureText(label).width + size);
    // The state on the right; on a narrow screen without the profile's name, and the
    // readings shortened to S and I so that the two never overlap.
    let state = p.paused ? "PAUSED" : p.state ? (p.profile ? p.profile + " " : "") + stateText(p.state) : "";
    const font = w => w + " " + size + 'px "DejaVu Sans", system-ui, sans-serif';
    const width = (t, w) => { g.font = font(w); return g.measureText(t).width; };
    const fits = () => lx + width(line, "normal") + width(state, "bold") + size <= W - pad;
    if (!fits() && p.state && !p.paused) state = stateText(p.state);
    if (!fits()) line = "S " + lufs(p.short_term_lufs) + "  I " + lufs(p.integrated_lufs) + " LUFS";
    text(line, lx, y0 + size, size, TEXT);
    if (state) text(state, W - pad, y0 + size, size, p.paused ? YELLOW : stateColor(p.state), "right", "bold");
    // The graph.
    const gy = y0 + 1.5 * size, gh = blockH - 1.5 * size - 0.5 * u;
    if (gh < 0.8 * u) return;
    const reference = p.target_lufs === undefined || p.target_lufs === null ? -23 : p.target_lufs;
    const tolerance = p.tolerance_lu === undefined || p.tolerance_lu === null ? 1 : p.tolerance_lu;
    const yOf = lu => gy + gh * (1 - (Math.max(range[0], Math.min(range[1], lu)) - range[0]) / (range[1] - range[0]));
    // The histogram of where the short-term loudness has been, on the graph's scale, at its right.
    const hist = histograms[name];
    const hw = hist ? Math.min(10 * u, 0.22 * gw) : 0, graphW = gw - (hist ? hw + 0.5 * u : 0);
    if (hist) drawHistogram(name, hist, gx + graphW + 0.5 * u, gy, hw, gh, yOf, reference, tolerance);
    g.fillStyle = "#181b1f"; g.fillRect(gx, gy, graphW, gh);
    g.fillStyle = "rgba(46, 204, 64, 0.18)"; g.fillRect(gx, yOf(tolerance), graphW, Math.max(1, yOf(-tolerance) - yOf(tolerance)));
    g.fillStyle = DIM; g.fillRect(gx, yOf(0), graphW, 1);
    const marks = scale18 ? [18, 9, 0, -9, -18, -27, -36] : [9, 0, -9, -18];
    let lastY = -1e9;
    for (const mk of marks) {
      const y = yOf(mk);
      if (Math.abs(y - lastY) < 0.9 * u) continue;
      lastY = y;
      text((mk > 0 ? "+" : "") + mk, gx - 0.4 * u, y + 0.3 * u, 0.75 * u, DIM, "right");
    }
    const points = history[name] || [];
    const xOf = t => gx + graphW * (1 - (now - t) / span);
    // The max momentary, faint; then the short-term as a line coloured against the target.
    g.fillStyle = "rgba(57, 204, 204, 0.25)";
    for (let k = 1; k < points.length; k++) {
      const a = points[k - 1], b = points[k];
      if (now - b.t > span || b.m <= -70 || b.t - a.t > 5000) continue;
      const x = xOf(a.t), w = Math.max(1, xOf(b.t) - x), y = yOf(b.m - reference);
      g.fillRect(x, y, w, gy + gh - y);
    }
    g.lineWidth = Math.max(1.5, 0.15 * u);
    for (let k = 1; k < points.length; k++) {
      const a = points[k - 1], b = points[k];
      // A gap (no audio, or the page was away) is left open.
      if (now - b.t > span || a.s <= -70 || b.s <= -70 || b.t - a.t > 5000) continue;
      const rel = b.s - reference;
      g.strokeStyle = Math.abs(rel) <= tolerance ? GREEN : rel < 0 ? YELLOW : RED;
      g.beginPath(); g.moveTo(Math.max(gx, xOf(a.t)), yOf(a.s - reference)); g.lineTo(xOf(b.t), yOf(rel)); g.stroke();
    }
  });
  const hint = "l meters · + − span · s scale";
  text(hint, W - pad, H - 0.8 * u, 0.8 * u, DIM, "right");
  text(minutes + " min ago", pad + labelW, H - 0.8 * u, 0.8 * u, DIM);
  const summary = (!connected ? "Reconnecting to jackvu. " : "") + list.map(([name, p]) =>
    shownName(name) + ": short-term " + lufs(p.short_term_lufs) + " LUFS, integrated " + lufs(p.integrated_lufs) + " LUFS"
    + (p.state ? ", " + p.state : "")).join("; ");
  if (live.textContent !== summary) live.textContent = summary;
}

// One programme's histogram: a bar per bin at its loudness on the graph's scale (LU against the
// target), as long as its share of the short-term windows against the largest bin's; coloured
// as the graph's line (green within the tolerance, yellow below, red above).
function drawHistogram(name, hist, x, y, w, h, yOf, reference, tolerance) {
  g.fillStyle = "#181b1f"; g.fillRect(x, y, w, h);
  histogramBoxes[name] = { x: x, y: y, w: w, h: h, reference: reference, yOf: yOf };
  let top = 0;
  for (const pct of hist) top = Math.max(top, pct);
  if (top <= 0) return;
  for (let k = 0; k < hist.length; k++) {
    if (hist[k] <= 0) continue;
    const lo = histogramBins.from + k * histogramBins.width - reference, hi = lo + histogramBins.width;
    const y0 = yOf(hi), y1 = yOf(lo);
    if (y1 - y0 < 0.5) continue;  // outside the scale
    const mid = (lo + hi) / 2;
    g.fillStyle = Math.abs(mid) <= tolerance ? GREEN : mid < 0 ? YELLOW : RED;
    g.fillRect(x, y0, Math.max(1, w * hist[k] / top), Math.max(1, y1 - y0 - 0.5));
  }
}

// What a channel's bits say, and its colour: digital silence, a constant, the word (16-bit,
// 24-bit, float), a DC offset: above −50 dBFS and no more than 30 dB below the channel's RMS
// (the mean of loud noise over a second wanders to −55 dBFS by chance; a real offset is steady).
function bitsVerdict(b, c) {
  if (b.depth === 0) return ["digital silence", DIM];
  if (b.constant) return ["constant " + b.dc.toFixed(1) + " dBFS", RED];
  const word = b.quantised ? b.quantised + "-bit" : "float (" + b.depth + " bits)";
  const ch = update && update.channels[c], rms = ch && ch.rms_dbfs !== null ? ch.rms_dbfs : -120;
  return b.dc > -50 && b.dc > rms - 30 ? [word + ", DC " + b.dc.toFixed(1) + " dBFS", YELLOW] : [word, TEXT];
}

// The bit meter (b): a row per channel of 32 cells, the bits below full scale from the top
// (left) down; lit from the highest bit any sample of the analysis block sets to the lowest
// (green within 16 bits, cyan to 24, yellow beyond: a float's finer bits), with 16 and 24
// marked; the verdict on the right.
function drawBits(W, H, u, pad, portrait) {
  text(W > 700 ? "Bit meter: bits in use over the analysis block (full scale at the left)" : "Bit meter (full scale at the left)",
    pad, 3.3 * u, 0.9 * u, DIM);
  const n = bitmeter.length, labelW = 2.5 * u, verdictW = portrait ? 0 : 16 * u;
  const x0 = pad + labelW, cellsW = W - 2 * pad - labelW - verdictW, cell = cellsW / 32;
  const top = 5.5 * u, rowH = Math.max(0.9 * u, Math.min(2.4 * u, (H - top - 3 * u) / Math.max(1, n) / (portrait ? 2 : 1)));
  text("1", x0 + 0.5 * cell, top - 0.5 * u, 0.75 * u, DIM, "center");
  for (const mark of [8, 16, 24, 32]) text(String(mark), x0 + (mark - 0.5) * cell, top - 0.5 * u, 0.75 * u, DIM, "center");
  bitRows = [];
  bitmeter.forEach((b, c) => {
    const y = top + c * rowH * (portrait ? 2 : 1), h = rowH * 0.7;
    bitRows.push({ y: y, h: h, x: x0, cell: cell });
    text(String(c + 1), pad, y + h * 0.85, Math.min(h, 1.1 * u), c === selected ? CYAN : DIM);
    for (let i = 1; i <= 32; i++) {
      const lit = i > b.headroom && i <= b.depth;
      g.fillStyle = lit ? (i <= 16 ? GREEN : i <= 24 ? CYAN : YELLOW) : "#22272d";
      g.fillRect(x0 + (i - 1) * cell + 1, y, Math.max(1, cell - 2), h);
    }
    g.fillStyle = DIM;
    for (const mark of [16, 24]) g.fillRect(x0 + mark * cell - 0.5, y - 0.15 * u, 1, h + 0.3 * u);
    const [verdict, color] = bitsVerdict(b, c);
    if (portrait) text(verdict, x0, y + h + 0.9 * u, 0.8 * u, color);
    else text(verdict, x0 + cellsW + u, y + h * 0.85, Math.min(h, 1.0 * u), color);
  });
  if (!n) text("no bit meter data yet", pad, top + u, 1.1 * u, DIM);
  text("b meters", W - pad, H - 0.8 * u, 0.8 * u, DIM, "right");
  const summary = (!connected ? "Reconnecting to jackvu. " : "") + bitmeter.map((b, c) => "Input " + (c + 1) + ": " + bitsVerdict(b, c)[0]).join("; ");
  if (live.textContent !== summary) live.textContent = summary;
}

// The goniometer of one pair (g): mid (L+R) up, side (R−L) across, so mono is a vertical
// line, an inverted leg a horizontal one, one leg alone a diagonal (L up-left, R up-right),
// uncorrelated signals a round cloud. Auto gain: the points' largest sample fills the scope
// (its level is printed); a phosphor keeps the last frames fading.
function drawGoniometer(W, H, u, pad, portrait) {
  const count = gonio ? gonio.data.length : 0;
  if (pair >= count) pair = 0;
  const name = count ? gonio.names[pair] : "-";
  text("Goniometer, pair " + name + (count > 1 ? "  (" + (pair + 1) + "/" + count + ")" : ""), pad, 3.3 * u, 0.9 * u, DIM);
  const size = Math.round(Math.max(4 * u, Math.min(W - 2 * pad, H - 8 * u))), bx = Math.round((W - size) / 2), by = Math.round(4.2 * u);
  goniometerBox = { x: bx, y: by, size: size };
  const dpr = window.devicePixelRatio || 1, px = Math.max(1, Math.round(size * dpr));
  if (!phosphor || phosphor.px !== px || phosphor.pair !== pair) {
    const c = document.createElement("canvas"); c.width = px; c.height = px;
    phosphor = { canvas: c, ctx: c.getContext("2d"), px: px, pair: pair, drawn: null };
  }
  const data = count ? gonio.data[pair] : null, scale = count ? gonio.scale[pair] : 0;
  if (data && phosphor.drawn !== data) {
    const q = phosphor.ctx, half = px / 2, reach = 0.46 * px / Math.SQRT2, dot = Math.max(1.5, 1.6 * dpr);
    q.globalCompositeOperation = "destination-out"; q.fillStyle = "rgba(0, 0, 0, 0.45)"; q.fillRect(0, 0, px, px);
    q.globalCompositeOperation = "source-over"; q.fillStyle = GREEN;
    if (scale > 0) {
      for (let k = 0; k + 1 < data.length; k += 2) {
        const l = data[k] / 127, r = data[k + 1] / 127;
        q.fillRect(half + (r - l) * reach - dot / 2, half - (l + r) * reach - dot / 2, dot, dot);
      }
    }
    phosphor.drawn = data;
  }
  g.fillStyle = "#181b1f"; g.fillRect(bx, by, size, size);
  // The axes: M (vertical), S (horizontal), L and R (the diagonals), and the unit circle.
  g.strokeStyle = "#2c333a"; g.lineWidth = 1;
  const cx = bx + size / 2, cy = by + size / 2, rr = 0.46 * size;
  g.beginPath(); g.moveTo(cx, by); g.lineTo(cx, by + size); g.moveTo(bx, cy); g.lineTo(bx + size, cy);
  g.moveTo(cx - rr / Math.SQRT2, cy - rr / Math.SQRT2); g.lineTo(cx + rr / Math.SQRT2, cy + rr / Math.SQRT2);
  g.moveTo(cx + rr / Math.SQRT2, cy - rr / Math.SQRT2); g.lineTo(cx - rr / Math.SQRT2, cy + rr / Math.SQRT2);
  g.stroke();
  text("M", cx + 0.3 * u, by + 1.1 * u, 0.9 * u, DIM); text("S", bx + size - 1.2 * u, cy - 0.3 * u, 0.9 * u, DIM);
  text("L", cx - rr / Math.SQRT2 - 1.1 * u, cy - rr / Math.SQRT2, 0.9 * u, DIM);
  text("R", cx + rr / Math.SQRT2 + 0.3 * u, cy - rr / Math.SQRT2, 0.9 * u, DIM);
  g.drawImage(phosphor.canvas, bx, by, size, size);
  const level = scale > 0 ? (20 * Math.log10(scale)).toFixed(1) + " dBFS peak (auto gain)" : "silent";
  const corr = pairCorrelation(name);
  text(level + (corr === null ? "" : "   correlation " + (corr >= 0 ? "+" : "") + corr.toFixed(2)), pad, H - 2.0 * u, 0.9 * u, scale > 0 ? TEXT : DIM);
  // The pair's balance and its mid and side levels (over the correlation's 0.3 s window).
  const lv = count ? gonio.levels[pair] : null;
  if (lv && scale > 0) {
    const db = x => x <= -119.5 ? "-inf" : x.toFixed(1);
    const side = Math.abs(lv.balance) >= 119.5 ? (lv.balance > 0 ? "left only" : "right only") : (lv.balance >= 0 ? "+" : "") + lv.balance.toFixed(1) + " dB";
    text("balance " + side + "   mid " + db(lv.mid) + "   side " + db(lv.side) + " dBFS", pad, H - 0.8 * u, 0.9 * u, TEXT);
  }
  // The keys at the top right, where the title line leaves room (a phone has none).
  const keys = "Tab / ← → pair · g meters";
  g.font = 0.8 * u + 'px "DejaVu Sans", system-ui, sans-serif';
  const titleW = g.measureText("Goniometer, pair " + name + "  (00/00)").width * 0.9 / 0.8;
  if (pad + titleW + g.measureText(keys).width + 2 * u < W) text(keys, W - pad, 3.3 * u, 0.8 * u, DIM, "right");
  const summary = (!connected ? "Reconnecting to jackvu. " : "") + "Goniometer, pair " + name + ": " + level;
  if (live.textContent !== summary) live.textContent = summary;
}

// A pair's correlation from the update, by the goniometer's name for it.
function pairCorrelation(name) {
  if (!update) return null;
  const m = /^(\d+)-(\d+)$/.exec(name);
  if (m && update.correlation) { const r = update.correlation[(+m[1] - 1) / 2]; return r === undefined ? null : r; }
  for (const [p, v] of Object.entries(update.programmes || {})) {
    for (const [label, r] of Object.entries(v.correlation || {})) if (p + " " + label === name) return r;
  }
  return null;
}

// The colour scales: 256 RGB entries each, from silence (0) to 0 dB (255).
const LUTS = {};
function lut(name) {
  if (LUTS[name]) return LUTS[name];
  const stops = { heat: [[0, 0, 0, 0], [0.3, 20, 30, 140], [0.55, 200, 30, 60], [0.8, 255, 180, 0], [1, 255, 255, 220]],
    grey: [[0, 0, 0, 0], [1, 255, 255, 255]], green: [[0, 0, 0, 0], [0.6, 30, 160, 50], [1, 220, 255, 200]] }[name];
  const t = new Uint8Array(256 * 3);
  for (let i = 0; i < 256; i++) {
    const x = i / 255; let k = 1; while (k < stops.length - 1 && stops[k][0] < x) k++;
    const a = stops[k - 1], b = stops[k], f = (x - a[0]) / Math.max(1e-9, b[0] - a[0]);
    for (let ch = 0; ch < 3; ch++) t[3 * i + ch] = Math.round(a[ch + 1] + f * (b[ch + 1] - a[ch + 1]));
  }
  return (LUTS[name] = t);
}

// The spectrogram of the selected input (w): time across (now at the right, `span` seconds),
// frequency up on the bars' log scale, level as colour (−80 … 0 dB).
function drawSpectrogram(W, H, u, pad, portrait) {
  const n = update.channels.length;
  if (selected >= n) selected = 0;
  text("Spectrogram, input " + (selected + 1) + ", last " + (span >= 60 ? span / 60 + " min" : span + " s") + ", " + palette,
    pad, 3.3 * u, 0.9 * u, DIM);
  const labelW = 3.5 * u, bx = pad + labelW, by = 4.2 * u, bw = W - 2 * pad - labelW, bh = H - by - 3 * u;
  spectrogramBox = { x: bx, y: by, w: bw, h: bh };
  g.fillStyle = "#000"; g.fillRect(bx, by, bw, bh);
  if (spectro && bh > u) {
    const cols = Math.max(1, Math.round(span / spectro.period)), bars = spectro.bars, t = lut(palette);
    const image = g.createImageData(cols, bars), d = image.data;
    for (let x = 0; x < cols; x++) {
      const column = spectrogramColumn(selected, cols - 1 - x);
      if (!column) continue;
      for (let b = 0; b < bars; b++) {
        const v = column[b], i = 4 * ((bars - 1 - b) * cols + x);
        d[i] = t[3 * v]; d[i + 1] = t[3 * v + 1]; d[i + 2] = t[3 * v + 2]; d[i + 3] = 255;
      }
    }
    const off = document.createElement("canvas"); off.width = cols; off.height = bars;
    off.getContext("2d").putImageData(image, 0, 0);
    g.imageSmoothingEnabled = false; g.drawImage(off, bx, by, bw, bh); g.imageSmoothingEnabled = true;
    const fMin = display.bars_from_hz, fMax = Math.min(display.bars_to_hz, update.sample_rate_hz / 2);
    let lastY = 1e9;
    for (const f of [63, 125, 250, 500, 1000, 2000, 4000, 8000, 16000]) {
      if (f < fMin || f > fMax) continue;
      const y = by + bh * (1 - Math.log(f / fMin) / Math.log(fMax / fMin));
      if (lastY - y < 1.2 * u) continue;
      lastY = y;
      text(f >= 1000 ? f / 1000 + "k" : String(f), bx - 0.4 * u, y + 0.3 * u, 0.8 * u, DIM, "right");
    }
  }
  text("-" + (span >= 60 ? span / 60 + " min" : span + " s"), bx, H - 1.8 * u, 0.8 * u, DIM);
  text("now", bx + bw, H - 1.8 * u, 0.8 * u, DIM, "right");
  text("Tab / ← → input · + − span · c colours · w meters", W - pad, H - 0.6 * u, 0.8 * u, DIM, "right");
  const summary = (!connected ? "Reconnecting to jackvu. " : "") + "Spectrogram, input " + (selected + 1);
  if (live.textContent !== summary) live.textContent = summary;
}

window.addEventListener("resize", resize);
window.addEventListener("keydown", (e) => {
  let n = update ? update.channels.length : 1;
  if (e.key === "l" || e.key === "g" || e.key === "w" || e.key === "b") {
    const chosen = { l: "loudness", g: "goniometer", w: "spectrogram", b: "bits" }[e.key];
    view = view === chosen ? "meters" : chosen; phosphor = null; draw(); return;
  }
  if (e.key === "c" && view === "spectrogram") { palette = PALETTES[(PALETTES.indexOf(palette) + 1) % PALETTES.length]; draw(); return; }
  if ((e.key === "+" || e.key === "=" || e.key === "-") && view === "spectrogram") {
    const i = SPANS.indexOf(span) + (e.key === "-" ? -1 : 1);
    span = SPANS[Math.max(0, Math.min(SPANS.length - 1, i))]; draw(); return;
  }
  if (view === "goniometer") {
    const pairs = gonio ? gonio.data.length : 1;
    const step = e.key === "Tab" || e.key === "ArrowRight" || e.key === "ArrowDown" ? (e.shiftKey && e.key === "Tab" ? pairs - 1 : 1)
      : e.key === "ArrowLeft" || e.key === "ArrowUp" ? pairs - 1 : 0;
    if (step) { pair = (pair + step) % Math.max(1, pairs); phosphor = null; e.preventDefault(); draw(); }
    return;
  }
  if (e.key === "s") { scale18 = !scale18; draw(); return; }
  if (e.key === "+" || e.key === "=" || e.key === "-") {
    const i = WINDOWS.indexOf(minutes) + (e.key === "-" ? -1 : 1);
    minutes = WINDOWS[Math.max(0, Math.min(WINDOWS.length - 1, i))]; draw(); return;
  }
  if (e.key === "Tab" || e.key === "ArrowRight" || e.key === "ArrowDown") {
    selected = (selected + (e.shiftKey && e.key === "Tab" ? n - 1 : 1)) % n; e.preventDefault(); draw();
  } else if (e.key === "ArrowLeft" || e.key === "ArrowUp") {
    selected = (selected + n - 1) % n; e.preventDefault(); draw();
  }
});
canvas.addEventListener("click", (e) => {
  const rect = canvas.getBoundingClientRect(), y = e.clientY - rect.top;
  for (const [a, b, i] of meterRows) if (y >= a && y < b) { selected = i; draw(); }
});
resize();
connect();
