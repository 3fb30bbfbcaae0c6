"""Sites: many files of many sizes, some far more popular than others, as a real site is; the
built-in models (httpbench.site.models) and a user's document root with the URL mix of its
access log (httpbench.site.docroot, httpbench.site.access_log)."""

from httpbench.site.mix import ORDERS, SIZE_CLASSES, Mix, Site, SiteError

__all__ = ["ORDERS", "SIZE_CLASSES", "Mix", "Site", "SiteError"]
