"""Built-in site models: many files of many sizes, some far more popular than others, generated
the same in every run of a plan (httpbench.site.text makes the bytes from name and size alone).

A model holds its files' names and sizes and its URL mix, never their bytes: `content(name)`
makes one file's bytes when a server's document root is written or verification checks it, so a
50 MB SPECweb99 site costs its list of names in memory, not 50 MB in every process a plan reaches.
"""

from __future__ import annotations

from httpbench.site.mix import Mix, Site, SiteError

MODELS = ("specweb99", "assets")


def model(name: str, directories: int = 10) -> Site:
    """The built-in model `name`; `directories` sizes SPECweb99's file set."""
    if name == "specweb99":
        return specweb99(directories)
    if name == "assets":
        return assets()
    raise SiteError(f"unknown site model {name!r}; use one of {', '.join(MODELS)}")


# SPECweb99's static file set, as SPECweb96 defined it (https://www.spec.org/osg/web96/workload.html,
# tables 1 and 2) and SPECweb99 kept it (Ruan and Pai, USENIX 2006, section 2,
# https://static.usenix.org/events/usenix06/tech/full_papers/ruan/ruan_html/node5.html): four
# classes of nine files, class c's file f being (f + 1) * 102, 1024, 10,240 or 102,400 bytes
# (102 B to 900 KB); 35 % of requests go to class 0, 50 % to class 1, 14 % to 2 and 1 % to 3; a
# directory holds the 36 files and directories are chosen by a Zipf law of alpha 1.
SPECWEB99_CLASS_BYTES = (102, 1024, 10240, 102400)
SPECWEB99_CLASS_SHARES = (0.35, 0.50, 0.14, 0.01)
# Within a class, files are not equally popular: the fifth (f = 4) is the most, falling off on
# both sides. These shares are SPECweb99's table as its design document is quoted elsewhere; the
# stored pages searched for this code did not hold the table itself, so only its shape (a peak
# at f = 4) is vouched for by a source read here.
SPECWEB99_FILE_SHARES = (0.039, 0.059, 0.088, 0.177, 0.353, 0.118, 0.071, 0.050, 0.044)


def specweb99(directories: int = 10) -> Site:
    if isinstance(directories, bool) or not isinstance(directories, int) or directories < 1:
        raise SiteError(f"directories must be a whole number >= 1, got {directories!r}")
    zipf = [1.0 / rank for rank in range(1, directories + 1)]
    harmonic = sum(zipf)
    files = []
    weights = []
    for d in range(directories):
        for c, (unit, class_share) in enumerate(zip(SPECWEB99_CLASS_BYTES, SPECWEB99_CLASS_SHARES)):
            for f, file_share in enumerate(SPECWEB99_FILE_SHARES):
                # SPECweb99's own names (dir00000/class1_3), with .html so that a server
                # compressing by type treats every file alike, as SPECweb99's text files were.
                files.append((f"dir{d:05d}/class{c}_{f}.html", (f + 1) * unit))
                weights.append(zipf[d] / harmonic * class_share * file_share)
    paths = tuple("/" + name for name, _ in files)
    return Site(f"specweb99 {directories}dirs", tuple(files), Mix(paths, tuple(weights)))


# A page's assets, like HttpArena's static profile (20 files of 6-300 KB: CSS, JS, HTML, woff2,
# SVG, webp, JSON; https://github.com/MDA2AV/HttpArena). Sizes are typical of a current site's
# bundles; the weights say how often a browser without a warm cache asks for each: the style
# sheets, scripts and fonts every page needs come with each page view, images and data less.
ASSETS = (
    # (name, bytes, weight)
    ("index.html", 24_576, 10),
    ("about.html", 12_288, 3),
    ("blog/post.html", 36_864, 4),
    ("css/main.css", 49_152, 10),
    ("css/vendor.css", 155_648, 10),
    ("js/runtime.js", 6_144, 10),
    ("js/app.js", 180_224, 10),
    ("js/vendor.js", 307_200, 10),
    ("data/config.json", 8_192, 6),
    ("data/products.json", 65_536, 4),
    ("img/logo.svg", 10_240, 10),
    ("img/icons.svg", 40_960, 8),
    ("img/hero.webp", 225_280, 8),
    ("img/product-1.webp", 61_440, 5),
    ("img/product-2.webp", 53_248, 5),
    ("img/avatar.webp", 6_144, 3),
    ("fonts/inter-regular.woff2", 49_152, 10),
    ("fonts/inter-bold.woff2", 51_200, 7),
    ("fonts/icons.woff2", 20_480, 6),
    ("manifest.json", 6_144, 2),
)


def assets() -> Site:
    files = tuple((name, size) for name, size, _ in ASSETS)
    mix = Mix(tuple("/" + name for name, _ in files), tuple(float(w) for _, _, w in ASSETS))
    return Site("assets", files, mix)
