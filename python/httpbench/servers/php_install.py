"""What running PHP needs installed: PHP-FPM's program and mod_php's module, with the Debian
packages and commands that install them. A leaf: the server base class asks it whether a server's
PHP is there, and the PHP-FPM pool (php.py) starts what it names."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Optional

FPM = "/usr/sbin/php-fpm8.2"
FPM_PACKAGES = ("php8.2-fpm", "php8.2-opcache")
FPM_INSTALL = "apt-get install -y " + " ".join(FPM_PACKAGES)
MOD_PHP = Path("/usr/lib/apache2/modules/libphp8.2.so")
MOD_PHP_INSTALL = "apt-get install -y libapache2-mod-php8.2"


# What a server runs PHP with, by `Server.runs_php`, as `httpbench servers` names it, and the
# command that installs it.
RUNS_WITH = {"fastcgi": (Path(FPM).name, FPM_INSTALL), "module": ("mod_php", MOD_PHP_INSTALL)}


def missing(runs_php: str) -> Optional[str]:
    """None when the PHP a server runs (`Server.runs_php`: "fastcgi" or "module") is installed,
    else one line naming what is missing and the command that installs it."""
    install = RUNS_WITH[runs_php][1]
    if runs_php == "fastcgi" and not (shutil.which(FPM) or Path(FPM).is_file()):
        return f"PHP-FPM is not installed ({FPM} is missing); install it with: {install}"
    if runs_php == "module" and not MOD_PHP.is_file():
        return f"mod_php is not installed ({MOD_PHP} is missing); install it with: {install}"
    return None
