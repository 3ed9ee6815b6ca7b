#!/usr/bin/env python3
"""The organ-registration pitch set of issue 33 item 8, against aubio (BENCHMARKS.md).

Church, reed and drawbar organ (General MIDI programs 19, 20, 16), keys 36, 48, 60 and 72,
each as 8', 16' + 8', 8' + 4' and 16' + 8' + 4' (the 16' and 4' the same program an octave
down and up): 48 notes of 1.5 s, 1 s apart, rendered by FluidSynth as PitchSetTests renders
(no reverb or chorus, 48 kHz, mixed to mono), read by `jackvu analyze --stream --send pitch
--format json` and by `aubiopitch -B 4096 -H 1024` (yinfft). A note is right when the median
of its frames from 0.4 s to its release is within half a semitone of the key: the 8' pitch, as
organists name a registration.

16' + 8' on key K and 8' + 4' on key K - 12 are the same two MIDI notes on the same program
(the same audio) with answers an octave apart: 9 such pairs put the set's ceiling at 39.

    python3 Tools/pitch-organs.py [JACKVU [SOUNDFONT]]

JACKVU defaults to .build/release/jackvu, SOUNDFONT to csound's General MIDI bank
(Debian's csound-soundfont), on which no pitch code was tuned; a missing one is an error
(fluidsynth would render its default soundfont instead). Needs fluidsynth, sox and aubio-tools.
Works in a temporary folder of its own, removed at the end.
"""
import json, math, os, shutil, struct, subprocess, sys, tempfile

jackvu = sys.argv[1] if len(sys.argv) > 1 else '.build/release/jackvu'
soundfont = sys.argv[2] if len(sys.argv) > 2 else '/usr/share/sounds/sf2/sf_GMbank.sf2'
organs = [(16, 'drawbar'), (19, 'church'), (20, 'reed')]
keys = [36, 48, 60, 72]
registrations = [("8'", [0]), ("16'+8'", [-12, 0]), ("8'+4'", [0, 12]), ("16'+8'+4'", [-12, 0, 12])]


def quantity(v):
    out = [v & 0x7F]
    v >>= 7
    while v:
        out.insert(0, (v & 0x7F) | 0x80)
        v >>= 7
    return bytes(out)


def midi_file():
    """Format 0, 480 ticks a beat at 120 bpm: 1440 ticks are 1.5 s, 960 are 1 s."""
    track, gap, notes = b'', 0, []
    for program, name in organs:
        track += quantity(gap) + bytes([0xC0, program])
        gap = 0
        for key in keys:
            for registration, offsets in registrations:
                for i, o in enumerate(offsets):
                    track += quantity(gap if i == 0 else 0) + bytes([0x90, key + o, 100])
                for i, o in enumerate(offsets):
                    track += quantity(1440 if i == 0 else 0) + bytes([0x80, key + o, 0])
                gap = 960
                notes.append((name, key, registration))
    track += quantity(gap) + b'\xff\x2f\x00'
    return b'MThd' + struct.pack('>IHHH', 6, 0, 1, 480) + b'MTrk' + struct.pack('>I', len(track)) + track, notes


def midi(hz):
    return 69 + 12 * math.log2(hz / 440)


def median(frames, start, end):
    v = sorted(midi(hz) for t, hz in frames if start <= t <= end)
    return v[len(v) // 2] if v else None


def main():
    # fluidsynth falls back to its default soundfont (TimGM6mb here) when the one named is
    # missing, and the table would then be another soundfont's under this one's name.
    for path, what in ((jackvu, 'jackvu (build it with swift build -c release)'),
                       (soundfont, 'the soundfont (csound\'s: apt-get install csound-soundfont)')):
        if not os.path.isfile(path):
            sys.exit('pitch-organs.py: %s is missing: %s' % (path, what))
    folder = tempfile.mkdtemp(prefix='jackvu-organs-')
    try:
        data, notes = midi_file()
        mid, stereo, wav = (os.path.join(folder, n) for n in ('set.mid', 'stereo.wav', 'set.wav'))
        with open(mid, 'wb') as f:
            f.write(data)
        subprocess.run(['fluidsynth', '-ni', '-q', '-R', '0', '-C', '0', '-g', '0.5', '-r', '48000', '-F', stereo, soundfont, mid],
                       check=True)
        subprocess.run(['sox', stereo, wav, 'remix', '1-2'], check=True)
        ours = []
        out = subprocess.run([jackvu, 'analyze', '--stream', '--send', 'pitch', '--format', 'json', wav],
                             capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            o = json.loads(line)
            hz = (o.get('channels') or [{}])[0].get('pitch_hz')
            if hz and hz > 0:
                ours.append((o['time_s'], hz))
        theirs = []
        out = subprocess.run(['aubiopitch', '-i', wav, '-B', '4096', '-H', '1024'], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            f = line.split()
            if len(f) == 2 and float(f[1]) > 0:
                theirs.append((float(f[0]), float(f[1])))
        right = [0, 0]
        print('| organ | key | registration | jackvu | aubio |\n|---|---|---|---|---|')
        for i, (name, key, registration) in enumerate(notes):
            cells = []
            for j, frames in enumerate((ours, theirs)):
                m = median(frames, i * 2.5 + 0.4, i * 2.5 + 1.5)
                ok = m is not None and abs(m - key) < 0.5
                right[j] += ok
                cells.append(('–' if m is None else '%.2f' % m) + ('' if ok else ' ✗'))
            print('| %s | %d | %s | %s | %s |' % (name, key, registration, cells[0], cells[1]))
        print('jackvu right on %d of %d notes, aubio on %d' % (right[0], len(notes), right[1]))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


main()
