#!/usr/bin/env python3
"""Random file operations from several threads at once in an archive
through the mount, checked against invariants (tests/concurrent.sh runs it).

One run:   concurrent_model.py --dir DIR --seed S [--secs 40] [--threads 4]
           [--delay MS] [--block B] [--single 0|1] [--noshrink] [--ops a,b]
A hunt:    concurrent_model.py --dir DIR --loop MINUTES [--first-seed S]
EIFS in the environment names the binary (default src/eifs).  Exit 1 when
a run found a bug; its log is kept in DIR/logs/seed-S-FAIL.log.

Threads write, append, truncate, rename files and folders, delete, make
and remove folders, and save as editors do (a temporary renamed over the
file), under EIFS_SAVE_DELAY_MS so that saves overlap.  An errno is a
bug unless RACY allows it for that operation (a race with the other
threads explains it); so are a kind of operation that never succeeds (the
threads go on past --secs for it a while), a dead daemon, an operation
taking 30 s, a failed save in the log and a non-empty .eifs-status.

Contents: every byte written is part of a fixed-size block (size B per
run) <KIIIIIIII>payload\n whose payload follows from its header; every
write is one write() of one whole block at a block-aligned offset, and
truncation goes to block multiples, so every state a correct file system
can show is a sequence of whole blocks: W (whole write, index 0 only), O
(original, index 0 only), A (append / second write, anywhere), Z (zeros
from a truncate that extended).  Each thread also owns a folder tK whose
files only it touches: their contents are checked exactly after each of
its operations and at the end.  At the end, what the mount shows must
parse so, `eifs check` must pass, and a new mount must show the same.
"""
import argparse, errno, hashlib, json, os, random, shutil, signal, string, subprocess, sys, threading, time, traceback

EIFS = os.environ.get('EIFS', os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'src', 'eifs'))
BASE = None  # --dir

# ---------------------------------------------------------------- blocks
HDR = 11  # b'<K%08x>'


def block(kind, bid, B):
    hdr = b'<%c%08x>' % (kind, bid)
    n = B - HDR - 1
    h = hashlib.sha256(hdr).hexdigest().encode()
    return hdr + (h * (n // 64 + 1))[:n] + b'\n'


class Ids:
    def __init__(self, B):
        self.B = B
        self.lock = threading.Lock()
        self.next = 1
        self.kinds = {}

    def new(self, kind):
        with self.lock:
            i = self.next
            self.next += 1
            self.kinds[i] = kind
        return block(ord(kind), i, self.B), i


def parse(data, ids):
    """Returns None if data is a valid block sequence, else a reason."""
    B = ids.B
    if len(data) % B:
        return 'length %d not a multiple of %d' % (len(data), B)
    for k in range(len(data) // B):
        c = data[k * B:(k + 1) * B]
        if c == bytes(B):
            continue
        try:
            kind = chr(c[1])
            bid = int(c[2:10], 16)
        except Exception:
            return 'block %d: garbage header %r' % (k, c[:HDR])
        if c[0:1] != b'<' or c[10:11] != b'>':
            return 'block %d: garbage header %r' % (k, c[:HDR])
        if ids.kinds.get(bid) != kind:
            return 'block %d: id %d kind %s never written (known kind %r)' % (k, bid, kind, ids.kinds.get(bid))
        if c != block(ord(kind), bid, B):
            return 'block %d: id %d payload corrupted' % (k, bid)
        if kind in 'WO' and k != 0:
            return 'block %d: %s%d at index >0' % (k, kind, bid)
    return None


def write_once(path, flags, data):
    """One write() of data through a descriptor opened with flags."""
    fd = os.open(path, flags, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def describe(data, B):
    out = []
    for k in range(len(data) // B):
        c = data[k * B:(k + 1) * B]
        out.append('Z' if c == bytes(B) else c[1:10].decode('latin1', 'replace'))
    if len(data) % B:
        out.append('+%d bytes tail' % (len(data) % B))
    return out


# ---------------------------------------------------------------- pools
SH_DIRS = ['', 'd0', 'd1', 'd0/e0', 'd1/e1', 'd2', 'd2/e2', 'D0', 'd1/E1']
DIR_NAMES = ['d0', 'd1', 'd2', 'd3', 'e0', 'e1', 'e2', 'D0', 'E1']
SH_FILES = ['f0.dat', 'f1.dat', 'f2.dat', 'f3.dat', 'F0.dat']
NEW_DIR_PARENTS = ['', '', 'd0', 'd1', 'd2', 'd1/e1']  # where mkdir and rename_dir put folders

# The errnos each operation may end with because of what the other threads
# do at the same time; any other errno fails the run.  File and folder
# names never meet (*.dat, editors' temporaries, folder names), so EISDIR
# and ENOTDIR have no race to explain them.
RACY = {
    # ENOENT: its folder is missing (not made yet, or another thread's rmdir or rename_dir took it)
    'write': {errno.ENOENT},
    # ENOENT: its folder is missing, or (without O_CREAT) another thread's unlink or rename took the file
    'append': {errno.ENOENT},
    # ENOENT: another thread's unlink or rename took the file, or a rename_dir or rmdir its folder
    'truncate': {errno.ENOENT},
    # ENOENT: another thread's unlink or rename took the file, or a rename_dir or rmdir its folder
    'read': {errno.ENOENT},
    # ENOENT: another thread took the file (unlink, rename) or the folder of either name (rmdir, rename_dir)
    'rename_file': {errno.ENOENT},
    'rename_dir': {
        # another thread's rename_dir or rmdir took the folder or the target's parent (or it was never made)
        errno.ENOENT,
        # the target is a folder other threads made and wrote files into (mkdir, rename_dir, write)
        errno.ENOTEMPTY,
        # another thread's rename_dir moved the target's folder into this one after the path walk
        # (the kernel's check for a folder moved into itself comes after it; op_rename_dir narrows)
        errno.EINVAL,
    },
    # ENOENT: another thread's unlink or rename took the file, or a rename_dir or rmdir its folder
    'unlink': {errno.ENOENT},
    'mkdir': {
        # another thread's rename_dir or rmdir took the parent (or it was never made)
        errno.ENOENT,
        # the name is taken: an original folder, or one another thread's mkdir or rename_dir put there
        errno.EEXIST,
    },
    'rmdir': {
        # another thread's rmdir or rename_dir took the folder (or it was never made)
        errno.ENOENT,
        # other threads write and rename files into the shared folders
        errno.ENOTEMPTY,
    },
    # ENOENT: a folder of either name is missing, or another thread's editor or vim took the same temporary name
    'editor': {errno.ENOENT},
    # ENOENT: its folder is missing, or another thread's vim of the same file took 4913 or the backup first
    'vim': {errno.ENOENT},
    # ENOENT: its folder is missing (another thread's rmdir or rename_dir, or never made)
    'slow': {errno.ENOENT},
    # op_walk passes over a folder or file another thread took (ENOENT): nothing left to allow
    'walk': set(),
    # ENOENT: another thread's unlink or rename took the file, or a rename_dir or rmdir its folder
    'xdev': {errno.ENOENT},
    # only its own thread touches tK: no race at all
    'private': set(),
}
# the daemon is gone: the threads stop, the run is over
LOST = {errno.ENOTCONN, errno.ECONNABORTED}
# After --secs, how long the threads may go on for the kinds of operation
# that have not succeeded yet (a few seconds do, even with 200 ms saves).
OVERTIME = 120


class Refused(Exception):
    """A refusal the model foresees without any race (a folder renamed
    into itself): neither a bug nor a success."""


def j(*p):
    return '/'.join(x for x in p if x)


class Run:
    def __init__(self, a):
        self.a = a
        self.rng = random.Random(a.seed)
        self.B = a.block or self.rng.choice([37, 700, 4096, 1500])
        self.delay = a.delay if a.delay is not None else self.rng.choice([0, 0, 20, 50, 100, 200])
        self.nthreads = a.threads or self.rng.choice([3, 4])
        self.single = a.single if a.single is not None else (self.rng.random() < 0.15)
        self.ids = Ids(self.B)
        self.dir = os.path.join(BASE, 'run')
        self.game = os.path.join(self.dir, 'game')
        self.mnt = os.path.join(self.dir, 'mnt')
        self.arch = os.path.join(self.mnt, 'a.res')
        self.bugs = []
        self.suspects = []
        self.log = []
        self.loglock = threading.Lock()
        self.stop = threading.Event()
        self.inflight = {}
        self.nops = 0
        self.errstats = {}
        self.daemon = None
        self.private = {}  # tid -> {relpath: bytes}
        self.made_dirs = []  # folders a mkdir made (for rmdir)
        self.renaming = {}  # tid -> (from, to) of its rename_dir under way
        self.moves = []  # (when done, tid, from, to) of each rename_dir done
        self.done = {}  # op -> how many succeeded
        self.unexplained = {}  # (op, errno name) -> how many no race explains
        self.overtime = threading.Event()  # past --secs, for the kinds not done yet
        # --noshrink: no truncate, no O_TRUNC (the truncate-during-save bug
        # makes noise that can hide others)
        self.trunc_flag = 0 if a.noshrink else os.O_TRUNC

    # ------------------------------------------------------------ infra
    def bug(self, msg):
        with self.loglock:
            self.bugs.append(msg)
            self.log.append((time.time(), 'BUG', msg))
        print('BUG:', msg, flush=True)

    def suspect(self, msg):
        """Noted in the log, never a failure: for what a correct file
        system may also show (each caller says why)."""
        with self.loglock:
            self.suspects.append(msg)
            self.log.append((time.time(), 'SUSPECT', msg))

    def rec(self, tid, op, args, res, t0):
        with self.loglock:
            self.nops += 1
            self.log.append((t0, time.time(), tid, op, args, res))

    def setup(self):
        os.system('fusermount3 -uz %s 2>/dev/null' % self.mnt)
        shutil.rmtree(self.dir, ignore_errors=True)
        src = os.path.join(self.dir, 'src')
        for d in ['d0/e0', 'd1/e1', 'd2'] + ['t%d' % k for k in range(self.nthreads)]:
            os.makedirs(os.path.join(src, d))
        orig = ['d0/f0.dat', 'd0/e0/f1.dat', 'd1/f2.dat', 'd1/e1/f0.dat', 'f3.dat', 'd2/f1.dat']
        for k in range(self.nthreads):
            orig.append('t%d/p0.dat' % k)
        for p in orig:
            n = self.rng.randint(1, 3)
            data = b''.join(self.ids.new('O' if i == 0 else 'A')[0] for i in range(n))
            with open(os.path.join(src, p), 'wb') as f:
                f.write(data)
            if p.startswith('t'):
                self.private.setdefault(int(p[1]), {})[p] = data
        os.makedirs(self.game)
        subprocess.run([EIFS, 'pack', src, os.path.join(self.game, 'a.res')], check=True)
        src2 = os.path.join(self.dir, 'src2')
        os.makedirs(src2)
        with open(os.path.join(src2, 'x.dat'), 'wb') as f:
            f.write(self.ids.new('O')[0])
        subprocess.run([EIFS, 'pack', src2, os.path.join(self.game, 'b.res')], check=True)
        os.makedirs(self.mnt)

    def mount(self, delay, tag):
        env = dict(os.environ)
        env.pop('EIFS_SAVE_DELAY_MS', None)
        if delay:
            env['EIFS_SAVE_DELAY_MS'] = str(delay)
        args = [EIFS, 'mount', self.game, self.mnt, '-d' if (self.a.debug and tag == 'run') else '-f']
        if self.single and tag == 'run':
            args.append('-s')
        self.dlog = open(os.path.join(self.dir, 'daemon-%s.log' % tag), 'wb')
        self.daemon = subprocess.Popen(args, env=env, stdout=self.dlog, stderr=subprocess.STDOUT)
        with open(os.path.join(self.dir, 'daemon.pid'), 'w') as f:
            f.write(str(self.daemon.pid))
        for _ in range(200):
            if os.path.ismount(self.mnt) and os.path.isdir(self.arch):
                return
            if self.daemon.poll() is not None:
                raise RuntimeError('daemon exited %s at mount' % self.daemon.returncode)
            time.sleep(0.05)
        raise RuntimeError('mount not ready')

    def umount(self):
        r = subprocess.run(['fusermount3', '-u', self.mnt], capture_output=True)
        if r.returncode:
            time.sleep(1)
            r = subprocess.run(['fusermount3', '-u', self.mnt], capture_output=True)
        if r.returncode:
            self.bug('umount failed: %r' % r.stderr)
            subprocess.run(['fusermount3', '-uz', self.mnt])
        try:
            rc = self.daemon.wait(30)
        except subprocess.TimeoutExpired:
            self.bug('daemon did not exit after umount')
            self.daemon.kill()
            rc = self.daemon.wait()
        self.dlog.close()
        if rc != 0:
            self.bug('daemon exit status %s' % rc)
        self.daemon = None

    def force_cleanup(self):
        subprocess.run(['fusermount3', '-uz', self.mnt], capture_output=True)
        if self.daemon and self.daemon.poll() is None:
            self.daemon.kill()
            try:
                self.daemon.wait(10)
            except Exception:
                pass

    # ------------------------------------------------------------ ops
    def p(self, rel):
        return os.path.join(self.arch, rel)

    def rel(self, path):
        """path as the pools name it, for messages."""
        path = os.fsdecode(path)
        return os.path.relpath(path, self.arch) if path.startswith(self.arch + '/') else path

    def rand_dir(self, r):
        return r.choice(SH_DIRS)

    def rand_file(self, r):
        return j(self.rand_dir(r), r.choice(SH_FILES))

    def new_dir(self, r):
        return j(r.choice(NEW_DIR_PARENTS), r.choice(DIR_NAMES))

    def w_whole(self, r, path, kind='W'):
        data, i = self.ids.new(kind)
        write_once(self.p(path), os.O_WRONLY | os.O_CREAT | self.trunc_flag, data)
        return i

    def op_write(self, r, tid):
        path = self.rand_file(r)
        return path, self.w_whole(r, path)

    def op_append(self, r, tid):
        path = self.rand_file(r)
        data, i = self.ids.new('A')
        fl = os.O_WRONLY | os.O_APPEND | (os.O_CREAT if r.random() < 0.5 else 0)
        write_once(self.p(path), fl, data)
        return path, i

    def op_truncate(self, r, tid):
        path = self.rand_file(r)
        n = r.choice([0, 0, 1, 1, 2, 3]) * self.B
        if r.random() < 0.5:
            os.truncate(self.p(path), n)
        else:
            fd = os.open(self.p(path), os.O_WRONLY)
            try:
                os.ftruncate(fd, n)
            finally:
                os.close(fd)
        return path, n

    def op_read(self, r, tid):
        path = self.rand_file(r)
        with open(self.p(path), 'rb') as f:
            data = f.read()
        why = parse(data, self.ids)
        if why:
            # Only a suspect: Linux does not make a buffered read atomic
            # against a write or truncate of another thread (it copies page
            # by page, and blocks straddle pages), so a torn state may show.
            # What stays is checked once the threads stop (verify_snap).
            self.suspect('mid-run read %s: %s blocks=%s' % (path, why, describe(data, self.B)[:20]))
        return path, len(data)

    def op_rename_file(self, r, tid):
        a, b = self.rand_file(r), self.rand_file(r)
        os.rename(self.p(a), self.p(b))
        return a, b

    def op_rename_dir(self, r, tid):
        a = r.choice(SH_DIRS[1:])
        b = self.new_dir(r)
        into_itself = b.lower().startswith(a.lower() + '/')  # names are in any case
        t0 = time.time()
        self.renaming[tid] = (a, b)
        try:
            os.rename(self.p(a), self.p(b))
        except OSError as e:
            if e.errno == errno.EINVAL and into_itself:
                raise Refused(a, b, 'EINVAL: into itself')
            if e.errno == errno.EINVAL and '/' not in b:
                # RACY allows EINVAL for a target's folder moved into a
                # meanwhile: the archive, b's folder here, never moves
                self.bug('rename_dir %s -> %s: EINVAL, though b lies in no folder that could have moved into a'
                         % (a, b))
            raise
        else:
            with self.loglock:  # before renaming forgets it (moved_meanwhile)
                self.moves.append((time.time(), tid, a, b))
        finally:
            self.renaming[tid] = None
        if into_itself and self.moved_meanwhile(tid, t0, a, b):
            # the kernel found b's folder no longer in a (another thread
            # moved it out after this path walk): no loop, rightly done
            self.suspect('rename_dir %s -> %s done: its target folder was moved out of %s meanwhile' % (a, b, a))
        elif into_itself:
            self.bug('rename_dir %s -> %s: a folder moved into itself' % (a, b))
        return a, b

    def moved_meanwhile(self, tid, t0, a, b):
        """Whether another thread's rename_dir during [t0, now] moved a
        folder lying between a and b's folder out of a."""
        def out_of_a(move):
            src, dst = move[0].lower(), move[1].lower()
            return (src.startswith(a.lower() + '/') and b.lower().startswith(src + '/')
                    and not dst.startswith(a.lower() + '/'))
        with self.loglock:
            if any(out_of_a(m[2:]) for m in self.moves[-100:] if m[1] != tid and m[0] >= t0):
                return True
            return any(m and out_of_a(m) for t, m in list(self.renaming.items()) if t != tid)

    def op_unlink(self, r, tid):
        path = self.rand_file(r)
        os.unlink(self.p(path))
        return path,

    def op_mkdir(self, r, tid):
        d = self.new_dir(r)
        os.mkdir(self.p(d))
        with self.loglock:
            self.made_dirs.append(d)
        return d,

    def op_rmdir(self, r, tid):
        # the shared folders nearly always hold a file or are gone: half of
        # the picks name one of the last folders a mkdir made (d3 and the
        # like get no file), or rmdir would hardly ever remove one
        with self.loglock:
            made = self.made_dirs[-3:]
        d = r.choice(made) if made and r.random() < 0.5 else r.choice(SH_DIRS[1:])
        os.rmdir(self.p(d))
        return d,

    def tmpname(self, r, target):
        d, _, name = target.rpartition('/')
        style = r.choice(['sed', 'swp', 'gout', 'sed'])
        if style == 'sed':
            t = 'sed' + ''.join(r.choice(string.ascii_letters + string.digits) for _ in range(6))
        elif style == 'swp':
            t = '.%s.swp' % name
        else:
            t = '.goutputstream-' + ''.join(r.choice(string.ascii_uppercase + string.digits) for _ in range(6))
        return j(d, t)

    def op_editor(self, r, tid):
        target = self.rand_file(r)
        tmp = self.tmpname(r, target)
        if r.random() < 0.3:
            # the temp lives in another folder of the archive
            tmp = j(self.rand_dir(r), tmp.rpartition('/')[2])
        i = self.w_whole(r, tmp)
        if r.random() < 0.3:
            time.sleep(r.random() * 0.05)
        try:
            os.rename(self.p(tmp), self.p(target))
        except OSError:
            try:
                os.unlink(self.p(tmp))
            except FileNotFoundError:  # another thread took the temporary (RACY)
                pass
            raise
        return tmp, target, i

    def op_vim(self, r, tid):
        target = self.rand_file(r)
        d, _, name = target.rpartition('/')
        swp = j(d, '.%s.swp' % name)
        with open(self.p(swp), 'wb') as f:
            # a valid block: an editor op of another thread may use the
            # same temporary name and rename it over a file (legitimately)
            f.write(self.ids.new('W')[0])
        try:
            with open(self.p(j(d, '4913')), 'wb'):
                pass
            os.unlink(self.p(j(d, '4913')))
            bak = j(d, name + '~')
            renamed = False
            try:
                os.rename(self.p(target), self.p(bak))
                renamed = True
            except FileNotFoundError:
                pass
            i = self.w_whole(r, target)
            if renamed:
                os.unlink(self.p(bak))
        finally:
            try:
                os.unlink(self.p(swp))
            except FileNotFoundError:  # an editor of another thread took it (RACY)
                pass
        return target, i

    def slow_write(self, r, path, pause, after_sync):
        """A block, a pause (a save may come), maybe an fsync, then a second
        block after it through the same descriptor."""
        d1, i1 = self.ids.new('W')
        d2, i2 = self.ids.new('A')
        fd = os.open(self.p(path), os.O_WRONLY | os.O_CREAT | self.trunc_flag, 0o644)
        try:
            os.write(fd, d1)
            time.sleep(r.random() * pause)
            if r.random() < 0.5:
                os.fsync(fd)
                time.sleep(r.random() * after_sync)
            os.pwrite(fd, d2, self.B)
        finally:
            os.close(fd)
        return d1, i1, d2, i2

    def op_slow(self, r, tid):
        path = self.rand_file(r)
        d1, i1, d2, i2 = self.slow_write(r, path, 0.3, 0.1)
        return path, i1, i2

    def op_walk(self, r, tid):
        def passed_over(e):
            # os.walk drops every error unless told: only a folder another
            # thread removed or renamed meanwhile may be passed over
            if e.errno != errno.ENOENT:
                raise e
        n = 0
        for root, dirs, files in os.walk(self.arch, onerror=passed_over):
            for f in files:
                try:
                    os.stat(os.path.join(root, f))
                except FileNotFoundError:
                    pass
                n += 1
        return n,

    def op_xdev(self, r, tid):
        a = self.rand_file(r)
        try:
            os.rename(self.p(a), os.path.join(self.mnt, 'b.res', 'y.dat'))
        except OSError as e:
            if e.errno == errno.EXDEV:
                return a, 'EXDEV'
            raise
        # man/eifs.1: a rename stays inside its archive (EXDEV)
        self.bug('xdev: %s renamed into b.res, not refused with EXDEV' % a)
        return a, 'renamed'

    # private (exact) ops
    def op_private(self, r, tid):
        model = self.private.setdefault(tid, {})
        names = ['t%d/p%d.dat' % (tid, k) for k in range(4)] + ['t%d/s/p%d.dat' % (tid, k) for k in range(2)]
        kind = r.choice(['write', 'write', 'append', 'append', 'trunc', 'rename', 'unlink', 'editor', 'slow', 'editor'])
        if kind == 'trunc' and not self.trunc_flag:
            kind = 'append'
        path = r.choice(names)
        res = None
        if not os.path.isdir(self.p('t%d/s' % tid)):
            os.mkdir(self.p('t%d/s' % tid))
        if kind == 'write':
            data, i = self.ids.new('W')
            write_once(self.p(path), os.O_WRONLY | os.O_CREAT | self.trunc_flag, data)
            model[path] = data if self.trunc_flag else data + model.get(path, b'')[self.B:]
            res = i
        elif kind == 'append':
            data, i = self.ids.new('A')
            write_once(self.p(path), os.O_WRONLY | os.O_APPEND | os.O_CREAT, data)
            model[path] = model.get(path, b'') + data
            res = i
        elif kind == 'trunc':
            if path not in model:
                return kind, path, 'absent'
            n = r.choice([0, 1, 2, 4]) * self.B
            os.truncate(self.p(path), n)
            old = model[path]
            model[path] = old[:n] + bytes(max(0, n - len(old)))
            res = n
        elif kind == 'rename':
            dst = r.choice(names)
            if path not in model:
                return kind, path, 'absent'
            os.rename(self.p(path), self.p(dst))
            if dst != path:
                model[dst] = model.pop(path)
            res = dst
        elif kind == 'unlink':
            if path not in model:
                return kind, path, 'absent'
            os.unlink(self.p(path))
            del model[path]
        elif kind == 'editor':
            data, i = self.ids.new('W')
            tmp = self.tmpname(r, path)
            with open(self.p(tmp), 'wb') as f:
                f.write(data)
            os.rename(self.p(tmp), self.p(path))
            model[path] = data
            res = i
        elif kind == 'slow':
            d1, i1, d2, i2 = self.slow_write(r, path, 0.2, 0)
            model[path] = d1 + d2 if self.trunc_flag else d1 + d2 + model.get(path, b'')[2 * self.B:]
            res = (i1, i2)
        # exact check
        for q in [path] + ([res] if kind == 'rename' else []):
            try:
                with open(self.p(q), 'rb') as f:
                    got = f.read()
            except FileNotFoundError:
                got = None
            want = model.get(q)
            if got != want:
                self.bug('private t%d after %s %s (%s): %s got %s want %s' % (
                    tid, kind, path, res, q, None if got is None else describe(got, self.B),
                    None if want is None else describe(want, self.B)))
        return kind, path, res

    OPS = [('write', 20), ('append', 12), ('truncate', 6), ('read', 10), ('rename_file', 12),
           ('rename_dir', 4), ('unlink', 6), ('mkdir', 5), ('rmdir', 4), ('editor', 10),
           ('vim', 3), ('slow', 4), ('walk', 2), ('xdev', 1), ('private', 18)]

    def ops_used(self):
        return [(n, w) for n, w in self.OPS if (not self.a.ops or n in self.a.ops.split(','))
                and not (self.a.noshrink and n == 'truncate')]

    def not_done(self):
        """The kinds of operation used that have not succeeded yet."""
        with self.loglock:
            return [n for n, w in self.ops_used() if not self.done.get(n)]

    def worker(self, tid):
        r = random.Random(self.a.seed * 100 + tid)
        ops = self.ops_used()
        names = [n for n, w in ops]
        weights = [w for n, w in ops]
        while not self.stop.is_set():
            op = r.choices(names, weights)[0]
            if self.overtime.is_set() and r.random() < 0.5:
                # only half: the other kinds go on (a rmdir needs a mkdir)
                op = r.choice(self.not_done() or [op])
            t0 = time.time()
            self.inflight[tid] = (t0, op)
            try:
                res = getattr(self, 'op_' + op)(r, tid)
                self.rec(tid, op, res, 'ok', t0)
                with self.loglock:
                    self.done[op] = self.done.get(op, 0) + 1
            except Refused as e:
                self.rec(tid, op, e.args, 'refused', t0)
            except OSError as e:
                en = e.errno
                name = errno.errorcode.get(en, str(en)) if en else str(e)
                key = '%s:%s' % (op, name)
                with self.loglock:
                    self.errstats[key] = self.errstats.get(key, 0) + 1
                paths = [self.rel(f) for f in (e.filename, e.filename2) if f is not None]
                self.rec(tid, op, paths, name, t0)
                if en not in RACY[op]:
                    with self.loglock:
                        n = self.unexplained[op, name] = self.unexplained.get((op, name), 0) + 1
                    if n <= 3:  # a broken operation fails thousands of times
                        self.bug('%s (t%d) on %s: %s (%s), which no race of the model explains' % (
                            op, tid, ' -> '.join(paths) or '?', name, e.strerror))
                    if en in LOST:
                        self.stop.set()
            except Exception as e:
                self.bug('exception in %s (t%d): %s' % (op, tid, traceback.format_exc()))
            dt = time.time() - t0
            # Only a suspect: an operation may wait behind saves of other
            # threads, each held EIFS_SAVE_DELAY_MS, on a machine loaded by
            # a sanitizer; the watchdog fails one that hangs (30 s).
            if dt > 10:
                self.suspect('slow op %s t%d %.1fs' % (op, tid, dt))
            self.inflight[tid] = None

    def watchdog(self):
        while not self.stop.is_set():
            time.sleep(1)
            if self.stop.is_set():
                return  # the run is over: the daemon may be unmounted
            now = time.time()
            for tid, v in list(self.inflight.items()):
                if v and now - v[0] > 30:
                    self.bug('HANG: t%d in %s for %.0fs' % (tid, v[1], now - v[0]))
                    self.dump_stacks()
                    self.stop.set()
                    return
            if self.daemon and self.daemon.poll() is not None:
                self.bug('daemon died during run: status %s' % self.daemon.returncode)
                self.stop.set()
                return

    def dump_stacks(self):
        if not self.daemon or not shutil.which('gdb'):
            return
        out = subprocess.run(['gdb', '-p', str(self.daemon.pid), '-batch', '-ex', 'thread apply all bt'],
                             capture_output=True, text=True, timeout=60)
        with open(os.path.join(self.dir, 'hang-stacks.txt'), 'w') as f:
            f.write(out.stdout + out.stderr)

    # ------------------------------------------------------------ verify
    def snapshot(self):
        snap = {}
        for root, dirs, files in os.walk(self.arch):
            for f in files:
                full = os.path.join(root, f)
                rel = os.path.relpath(full, self.arch)
                with open(full, 'rb') as fh:
                    snap[rel] = fh.read()
        return snap

    def verify_snap(self, snap, tag):
        for rel, data in sorted(snap.items()):
            why = parse(data, self.ids)
            if why:
                self.bug('%s: %s invalid: %s blocks=%s' % (tag, rel, why, describe(data, self.B)[:30]))
        for tid, model in self.private.items():
            pref = 't%d/' % tid
            have = {k: v for k, v in snap.items() if k.startswith(pref)}
            if have != model:
                for k in sorted(set(have) | set(model)):
                    if have.get(k) != model.get(k):
                        self.bug('%s: private %s: mount %s model %s' % (
                            tag, k, None if k not in have else describe(have[k], self.B),
                            None if k not in model else describe(model[k], self.B)))

    def run(self):
        self.setup()
        info = dict(seed=self.a.seed, B=self.B, delay=self.delay, threads=self.nthreads, single=self.single,
                    secs=self.a.secs, ops_used=self.a.ops, nocase=self.a.nocase, noshrink=self.a.noshrink)
        print('run', json.dumps(info), flush=True)
        self.mount(self.delay, 'run')
        wd = threading.Thread(target=self.watchdog, daemon=True)
        ths = [threading.Thread(target=self.worker, args=(t,), daemon=True) for t in range(self.nthreads)]
        for t in ths:
            t.start()
        wd.start()
        end = time.time() + self.a.secs
        while time.time() < end and not self.stop.is_set():
            time.sleep(0.2)
        # Each kind of operation must have succeeded once, or a file system
        # refusing, say, every rmdir with ENOTEMPTY (which a race explains
        # each time) would pass.  A slow run (200 ms saves, 80 operations
        # in 15 s) may not have got to all: the threads go on a while.
        self.overtime.set()
        while self.not_done() and time.time() < end + OVERTIME and not self.stop.is_set() and not self.bugs:
            time.sleep(0.2)
        info['overtime'] = round(time.time() - end, 1)
        if not self.stop.is_set() and not self.bugs:  # else the run has failed already
            with self.loglock:
                errs = sorted(self.errstats.items())
            for op in self.not_done():
                seen = ', '.join('%d %s' % (v, k.partition(':')[2]) for k, v in errs if k.startswith(op + ':'))
                self.bug('%s never succeeded in %d s (%s)' % (op, self.a.secs + OVERTIME, seen or 'no errors'))
        self.stop.set()
        for t in ths:
            t.join(45)
            if t.is_alive():
                self.bug('worker did not finish (hang)')
        for (op, name), n in sorted(self.unexplained.items()):
            if n > 3:
                self.bug('%s: %s %d times in all' % (op, name, n))
        wd.join(5)  # before the unmount, which it would take for a death
        alive = self.daemon.poll() is None
        if alive and not any('HANG' in b or 'ENOTCONN' in b for b in self.bugs):
            try:
                snap1 = self.snapshot()
                with open(os.path.join(self.mnt, '.eifs-status'), 'rb') as f:
                    st = f.read()
                if st.strip():
                    self.bug('.eifs-status not empty: %r' % st[:2000])
                self.verify_snap(snap1, 'mount')
                self.umount()
                r = subprocess.run([EIFS, 'check', os.path.join(self.game, 'a.res')], capture_output=True, text=True)
                if r.returncode:
                    self.bug('eifs check failed: %s %s' % (r.stdout, r.stderr))
                self.mount(0, 'remount')
                snap2 = self.snapshot()
                self.umount()
                if snap1 != snap2:
                    for k in sorted(set(snap1) | set(snap2)):
                        if snap1.get(k) != snap2.get(k):
                            self.bug('remount differs at %s: before %s after %s' % (
                                k, None if k not in snap1 else describe(snap1[k], self.B),
                                None if k not in snap2 else describe(snap2[k], self.B)))
                self.verify_snap(snap2, 'remount')
                info['files'] = len(snap1)
            except Exception:
                self.bug('verify exception: %s' % traceback.format_exc())
                self.force_cleanup()
        else:
            self.force_cleanup()
        self.force_cleanup()
        for tag in ('run', 'remount'):
            lp = os.path.join(self.dir, 'daemon-%s.log' % tag)
            if os.path.exists(lp) and os.path.getsize(lp):
                with open(lp, 'rb') as f:
                    txt = f.read().decode('utf8', 'replace')
                # Only a suspect: the daemon also logs what it does as it
                # should ("changed on disk; reading it again"); the lines
                # below are the failures.
                if not self.a.debug:
                    self.suspect('daemon-%s.log: %s' % (tag, txt[:3000]))
                for line in txt.splitlines():
                    if 'not saved' in line or 'signal' in line.lower() or 'assert' in line.lower() or 'AddressSanitizer' in line:
                        self.bug('daemon-%s.log: %s' % (tag, line[:500]))
        info.update(ops=self.nops, bugs=self.bugs, suspects=self.suspects[:50], nsuspects=len(self.suspects),
                    errstats=self.errstats, done=self.done)
        logdir = os.path.join(BASE, 'logs')
        os.makedirs(logdir, exist_ok=True)
        status = 'FAIL' if self.bugs else 'ok'
        lf = os.path.join(logdir, 'seed-%d-%s.log' % (self.a.seed, status))
        with open(lf, 'w') as f:
            f.write(json.dumps(info, indent=1) + '\n')
            for e in self.log:
                f.write(repr(e) + '\n')
        if self.bugs:
            keep = os.path.join(logdir, 'seed-%d-run' % self.a.seed)
            shutil.rmtree(keep, ignore_errors=True)
            shutil.copytree(self.dir, keep, ignore=shutil.ignore_patterns('mnt'))
        print('RESULT', json.dumps(dict((k, info[k]) for k in info if k not in ('suspects',))), flush=True)
        return 1 if self.bugs else 0


def loop(a):
    deadline = time.time() + a.loop * 60
    seed = a.first_seed
    summary = []
    while time.time() + 30 < deadline:
        secs = min(a.secs, max(10, int(deadline - time.time() - 25)))
        cmd = [sys.executable, __file__, '--seed', str(seed), '--secs', str(secs)] + a.extra
        for k in ('ops', 'delay', 'threads', 'block', 'single'):
            if getattr(a, k) is not None:
                cmd += ['--' + k, str(getattr(a, k))]
        if a.nocase:
            cmd.append('--nocase')
        if a.noshrink:
            cmd.append('--noshrink')
        if a.debug:
            cmd.append('--debug')
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=secs + 240)
            out = p.stdout
        except subprocess.TimeoutExpired as e:
            out = (e.stdout or b'').decode() if isinstance(e.stdout, bytes) else (e.stdout or '')
            out += '\nRESULT {"seed": %d, "bugs": ["driver timeout"], "ops": 0}\n' % seed
            mnt = os.path.join(BASE, 'run', 'mnt')
            subprocess.run(['fusermount3', '-uz', mnt])
            try:
                pid = int(open(os.path.join(BASE, 'run', 'daemon.pid')).read())
                os.kill(pid, signal.SIGKILL)
            except Exception:
                pass
        res = [l for l in out.splitlines() if l.startswith('RESULT')]
        r = json.loads(res[-1][7:]) if res else {'seed': seed, 'bugs': ['no result: ' + out[-2000:] + p.stderr[-2000:]], 'ops': 0}
        summary.append(r)
        print('seed %d: ops %s bugs %d nsuspects %s B=%s delay=%s thr=%s single=%s' % (
            seed, r.get('ops'), len(r.get('bugs', [])), r.get('nsuspects'), r.get('B'), r.get('delay'),
            r.get('threads'), r.get('single')), flush=True)
        for b in r.get('bugs', [])[:5]:
            print('   ', b[:500], flush=True)
        seed += 1
    with open(os.path.join(BASE, 'summary.json'), 'w') as f:
        json.dump(summary, f, indent=1)
    print('TOTAL ops %d, seeds %d, failing %s' % (sum(r.get('ops', 0) for r in summary), len(summary),
                                                  [r['seed'] for r in summary if r.get('bugs')]))


if __name__ == '__main__':
    ap = argparse.ArgumentParser()
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--secs', type=int, default=40)
    ap.add_argument('--threads', type=int)
    ap.add_argument('--delay', type=int)
    ap.add_argument('--block', type=int)
    ap.add_argument('--single', type=int)
    ap.add_argument('--loop', type=float)
    ap.add_argument('--ops', help='comma list of op names to use (default all)')
    ap.add_argument('--nocase', action='store_true', help='no case-variant names in the pools')
    ap.add_argument('--noshrink', action='store_true', help='no truncate and no O_TRUNC')
    ap.add_argument('--debug', action='store_true', help='daemon with -d (libfuse request log)')
    ap.add_argument('--first-seed', type=int, default=1)
    ap.add_argument('--dir', required=True, help='where the runs and their logs go')
    a, extra = ap.parse_known_args()
    a.extra = extra + ['--dir', a.dir]
    BASE = os.path.abspath(a.dir)
    if a.loop:
        loop(a)
    else:
        if a.single is not None:
            a.single = bool(a.single)
        if a.nocase:
            SH_DIRS[:] = [d for d in SH_DIRS if d == d.lower()]
            DIR_NAMES[:] = [d for d in DIR_NAMES if d == d.lower()]
            SH_FILES[:] = [f for f in SH_FILES if f == f.lower()]
        rr = Run(a)
        try:
            sys.exit(rr.run())
        finally:
            rr.force_cleanup()
