#!/usr/bin/env python3
"""Random mkdir, rmdir, create, write, unlink and rename inside one archive
of a mount, each also done in a plain folder (the model): every call must
succeed or fail alike (the same errno), and after each the two trees must
list the same names with the same contents.

usage: made_model.py ARCHIVE_DIR MODEL_DIR STEPS SEED
Prints the first difference and exits 1; exits 0 when all agree."""
import errno
import os
import random
import sys


def tree(top):
    """path -> contents (None for a folder), below top."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(top):
        rel = os.path.relpath(dirpath, top)
        for d in dirnames:
            out[os.path.normpath(os.path.join(rel, d))] = None
        for f in filenames:
            with open(os.path.join(dirpath, f), "rb") as fh:
                out[os.path.normpath(os.path.join(rel, f))] = fh.read()
    return out


def outcome(fn, *args):
    try:
        fn(*args)
        return 0
    except OSError as e:
        return e.errno


def write(path, data):
    with open(path, "wb") as fh:
        fh.write(data)


def main():
    arch, model, steps, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    rng = random.Random(seed)
    names = ["a", "b", "c", "d"]

    def some_path(depth=3):
        return os.path.join(*[rng.choice(names) for _ in range(rng.randint(1, depth))])

    ops = {
        "mkdir": lambda root, p, q, data: os.mkdir(os.path.join(root, p)),
        "rmdir": lambda root, p, q, data: os.rmdir(os.path.join(root, p)),
        "write": lambda root, p, q, data: write(os.path.join(root, p), data),
        "unlink": lambda root, p, q, data: os.unlink(os.path.join(root, p)),
        "rename": lambda root, p, q, data: os.rename(os.path.join(root, p), os.path.join(root, q)),
    }
    weights = {"mkdir": 4, "rmdir": 2, "write": 3, "unlink": 1, "rename": 3}
    kinds = [k for k, w in weights.items() for _ in range(w)]
    for step in range(steps):
        kind = rng.choice(kinds)
        p, q = some_path(), some_path()
        data = bytes(rng.randrange(256) for _ in range(rng.randint(0, 40)))
        got = outcome(ops[kind], arch, p, q, data)
        want = outcome(ops[kind], model, p, q, data)
        what = "step %d: %s %s%s" % (step, kind, p, " -> " + q if kind == "rename" else "")
        if got != want:
            print("%s: the mount says %s, a folder %s" %
                  (what, errno.errorcode.get(got, got) if got else "ok",
                   errno.errorcode.get(want, want) if want else "ok"))
            return 1
        a, m = tree(arch), tree(model)
        # views eifs shows beside entries (x.txt beside x) are not the model's
        a = {k: v for k, v in a.items()
             if k in m or not (os.path.splitext(k)[1] and a.get(os.path.splitext(k)[0], None) is not None)}
        if a != m:
            only_a = sorted(set(a) - set(m))
            only_m = sorted(set(m) - set(a))
            differ = sorted(k for k in set(a) & set(m) if a[k] != m[k])
            print("%s: the trees differ: only mounted %s, only in the folder %s, contents differ %s" %
                  (what, only_a, only_m, differ))
            return 1
    print("%d steps agree (seed %d)" % (steps, seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
