#!/usr/bin/env python3
"""Helpers of fifo-restore.sh (issue #30 spike, not part of the repo).

  header SAVE                 print the libvirt save header and the XML's
                              name/uuid/genid
  xml SAVE OUT NAME UUID DISK AGENT LOG [--empty-genid]
                              the job XML: the header's XML with name, uuid,
                              disk source, channel path, serial log replaced
  writer SAVE FIFO NAME UUID  mkfifo FIFO, write a rewritten header (name and
                              uuid replaced, same data_len) + the rest of SAVE
  ready CHAN TIMEOUT          HELLO/READY with slurm-vm-agent (as
                              bench/restore_spike.sh); prints time and ident
  console PTY CMD TIMEOUT     run CMD on the guest's ttyS0 shell, print output
"""
import os, re, socket, struct, sys, time, select, termios, tty

HDR = struct.Struct("=16s5I14I")  # 92 bytes, native endian (x86_64: LE)


def read_header(path):
    with open(path, "rb") as f:
        raw = f.read(HDR.size)
        v = HDR.unpack(raw)
        magic, version, data_len, was_running, compressed, cookie_off = v[:6]
        data = f.read(data_len)
    xml_len = cookie_off if cookie_off else data_len
    xml = data[:xml_len].split(b"\0", 1)[0].decode()
    cookie = data[xml_len:].split(b"\0", 1)[0].decode() if cookie_off else None
    return dict(magic=magic, version=version, data_len=data_len,
                was_running=was_running, compressed=compressed,
                cookie_off=cookie_off, unused=v[6:]), xml, cookie


def sub1(pattern, repl, s):
    n, c = re.subn(pattern, repl, s, count=1)
    if c != 1:
        sys.exit("fifo_tool: pattern not found: %s" % pattern)
    return n


def rename(xml, name, uuid):
    xml = sub1(r"<name>[^<]*</name>", "<name>%s</name>" % name, xml)
    xml = sub1(r"<uuid>[^<]*</uuid>", "<uuid>%s</uuid>" % uuid, xml)
    return xml


def build_data(h, xml, cookie):
    """header bytes + data area of exactly h['data_len'] bytes."""
    xb = xml.encode() + b"\0"
    cb = (cookie.encode() + b"\0") if cookie is not None else b""
    body = xb + cb
    if len(body) > h["data_len"]:
        sys.exit("fifo_tool: new XML too large for data_len %d" % h["data_len"])
    body += b"\0" * (h["data_len"] - len(body))
    cookie_off = len(xb) if cookie is not None else 0
    hdr = HDR.pack(h["magic"], h["version"], h["data_len"], h["was_running"],
                   h["compressed"], cookie_off, *h["unused"])
    return hdr + body


def cmd_header(save):
    h, xml, cookie = read_header(save)
    print("magic=%r version=%d data_len=%d was_running=%d compressed=%d "
          "cookieOffset=%d header=%d bytes, stream at offset %d, file %d bytes"
          % (h["magic"], h["version"], h["data_len"], h["was_running"],
             h["compressed"], h["cookie_off"], HDR.size, HDR.size + h["data_len"],
             os.path.getsize(save)))
    print("xml: %d bytes (+NUL), cookie: %s bytes" % (
        len(xml), len(cookie) if cookie is not None else "none"))
    for tag in ("name", "uuid", "genid"):
        m = re.search(r"<%s>([^<]*)</%s>" % (tag, tag), xml)
        print("xml %s: %s" % (tag, m.group(1) if m else "(none)"))
    if cookie:
        print("cookie: " + " ".join(cookie.split())[:300])


def cmd_xml(save, out, name, uuid, disk, agent, log, *opt):
    _, xml, _ = read_header(save)
    xml = rename(xml, name, uuid)
    xml = sub1(r"(<source file=')[^']*(')", r"\g<1>%s\g<2>" % disk, xml)
    xml = sub1(r"(<source mode='bind' path=')[^']*(')", r"\g<1>%s\g<2>" % agent, xml)
    xml = sub1(r"(<log file=')[^']*(')", r"\g<1>%s\g<2>" % log, xml)
    if "--empty-genid" in opt:
        xml = sub1(r"<genid>[^<]*</genid>", "<genid/>", xml)
    with open(out, "w") as f:
        f.write(xml)


def cmd_writer(save, fifo, name, uuid):
    t0 = time.time()
    h, xml, cookie = read_header(save)
    head = build_data(h, rename(xml, name, uuid), cookie)
    off = HDR.size + h["data_len"]
    size = os.path.getsize(save)
    if not os.path.exists(fifo):
        os.mkfifo(fifo, 0o600)
    fd = os.open(fifo, os.O_WRONLY)  # blocks until libvirtd opens it
    t_open = time.time()
    sent = 0
    try:
        v = memoryview(head)
        while v:
            n = os.write(fd, v)
            v = v[n:]
        with open(save, "rb") as src:
            pos = off
            while pos < size:
                n = os.sendfile(fd, src.fileno(), pos, min(1 << 22, size - pos))
                if n == 0:
                    break
                pos += n
                sent += n
    except BrokenPipeError:
        print("writer %s: reader closed the FIFO after %d stream bytes (EPIPE) "
              "%.3f s after open" % (name, sent, time.time() - t_open), flush=True)
        sys.exit(3)
    finally:
        os.close(fd)
    print("writer %s: header %d + stream %d bytes, opened by reader %.3f s after "
          "start, done %.3f s after open" % (name, len(head), sent, t_open - t0,
                                              time.time() - t_open), flush=True)


def connect(path, deadline):
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
            return s
        except OSError:
            s.close()
            if time.time() > deadline:
                sys.exit("no socket %s" % path)
            time.sleep(0.01)


def cmd_ready(path, timeout):
    deadline = time.time() + float(timeout)
    s = connect(path, deadline)
    nonce = int.from_bytes(os.urandom(8), "big")
    pl = struct.pack(">HHQI", 1, 1, nonce, 1) + b"\0"
    s.sendall(struct.pack(">HBBIIHH", 0x5653, 1, 1, 0, len(pl), 0, 0) + pl)
    buf, hello, ident = b"", False, ""
    while True:
        left = deadline - time.time()
        if left <= 0:
            sys.exit("the agent was not ready within %ss" % timeout)
        s.settimeout(left)
        try:
            d = s.recv(65536)
        except socket.timeout:
            continue
        if not d:
            sys.exit("qemu closed the agent channel")
        buf += d
        while len(buf) >= 16:
            magic, ver, kind, _, ln, _, _ = struct.unpack(">HBBIIHH", buf[:16])
            if magic != 0x5653 or ver != 1:
                buf = buf[1:]
                continue
            if len(buf) < 16 + ln:
                break
            p, buf = buf[16:16 + ln], buf[16 + ln:]
            if kind == 1 and struct.unpack(">HHQ", p[:12])[2] == nonce:
                hello, ident = True, p[16:].rstrip(b"\0").decode()
            elif kind == 2 and hello:
                t = time.time()
                s.close()
                print("%.6f %s" % (t, ident or "-"))
                return


def cmd_console(pty, cmd, timeout):
    fd = os.open(pty, os.O_RDWR | os.O_NOCTTY)
    tty.setraw(fd)
    marker = "END%d" % os.getpid()
    os.write(fd, ("\r%s; echo %s\r" % (cmd, marker)).encode())
    out = b""
    deadline = time.time() + float(timeout)
    while time.time() < deadline:
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            out += os.read(fd, 65536)
            if (marker + "\r").encode() in out or (marker + "\n").encode() in out:
                if out.count(marker.encode()) >= 2:
                    break
    os.close(fd)
    sys.stdout.write(out.decode(errors="replace").replace("\r", ""))
    print()


if __name__ == "__main__":
    op, args = sys.argv[1], sys.argv[2:]
    {"header": cmd_header, "xml": cmd_xml, "writer": cmd_writer,
     "ready": cmd_ready, "console": cmd_console}[op](*args)
