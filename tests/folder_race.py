#!/usr/bin/env python3
"""Folders that come and go under a path walk (tests/concurrent.sh runs it).

One thread makes and removes two folders inside a mounted archive over
and over: d2/d1 is made with mkdir, gets a file (a save: the archive's
folders then), loses it and is removed with rmdir; e/f, a folder of the
archive, has its only file moved out, stays (empty, as on a disk), is
removed with rmdir and made again, and gets the file back.  Other
threads open and list those folders, and stat them, meanwhile.  A folder
gone under them is ENOENT, as on a disk; the kernel walks a path once
more on ESTALE, but only once, so eifs must not answer ESTALE for a
folder removed through the mount: the program would get it.  The thread
that changes things is alone in doing so: any error it meets is a bug
(after one it puts the file back and goes on).  Prints one line of
JSON: the errors each side met and how many cycles and listings were
done.

usage: folder_race.py MOUNTED_ARCHIVE SECONDS
"""
import errno
import json
import os
import sys
import threading
import time


def main():
    arch, secs = sys.argv[1], float(sys.argv[2])
    stop = time.time() + secs
    errs, done = {}, {'cycles': 0, 'list': 0, 'stat': 0}
    lock = threading.Lock()

    def count(key, what):
        with lock:
            what[key] = what.get(key, 0) + 1

    def churn():
        p = lambda *a: os.path.join(arch, *a)
        while time.time() < stop:
            try:
                os.makedirs(p('d2', 'd1'), exist_ok=True)
                with open(p('d2', 'd1', 'x.dat'), 'w') as f:
                    f.write('x')
                os.unlink(p('d2', 'd1', 'x.dat'))
                os.rmdir(p('d2', 'd1'))
                os.rmdir(p('d2'))
                os.rename(p('e', 'f', 'y.dat'), p('y.dat'))
                if not os.path.isdir(p('e', 'f')):
                    raise OSError(errno.ENOENT, 'e/f went with its last file')
                os.rmdir(p('e', 'f'))
                os.rmdir(p('e'))
                os.makedirs(p('e', 'f'))
                os.rename(p('y.dat'), p('e', 'f', 'y.dat'))
                count('cycles', done)
            except OSError as e:
                count('churn:' + errno.errorcode.get(e.errno, str(e.errno)), errs)
                print('churn: %s' % e, file=sys.stderr)
                # as it was, so that one error does not spoil the rest
                try:
                    if os.path.exists(p('y.dat')):
                        os.makedirs(p('e', 'f'), exist_ok=True)
                        os.rename(p('y.dat'), p('e', 'f', 'y.dat'))
                except OSError as e2:
                    print('churn: cannot put y.dat back (%s); stopped' % e2, file=sys.stderr)
                    return

    def attempt(what, fn, *args):
        """fn(*args), counted as done or by its errno; None on an error."""
        try:
            got = fn(*args)
        except OSError as e:
            count(what + ':' + errno.errorcode.get(e.errno, str(e.errno)), errs)
            return None
        count(what, done)
        return got

    def look():
        while time.time() < stop:
            for rel in ('d2', 'd2/d1', 'e', 'e/f'):
                path = os.path.join(arch, rel)
                attempt('stat', os.stat, path)
                fd = attempt('open', os.open, path, os.O_RDONLY | os.O_DIRECTORY)
                if fd is not None:
                    attempt('list', os.listdir, fd)
                    os.close(fd)

    threads = [threading.Thread(target=churn)] + [threading.Thread(target=look) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps({'errors': errs, 'done': done}, sort_keys=True))


if __name__ == '__main__':
    main()
