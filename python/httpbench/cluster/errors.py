"""What goes wrong with a cluster: the cluster cannot be used as asked, or it went down."""

from httpbench.errors import Error
from httpbench.servers import ServerFailed


class ClusterError(Error):
    """The cluster cannot be used as asked; one line saying why and what to do."""


class ClusterDown(ClusterError):
    """Nothing more can be measured until the cluster's hosts are back: the run stops, to be
    resumed."""


class NoClientHost(ClusterDown):
    """No client host is left to load from."""


class SchedulerLost(ClusterDown):
    """The controller lost the scheduler, and the workers with it."""


class ServerHostLost(ServerFailed):
    """The server host's worker left the cluster, or never answered: its watchdog stops its
    servers, so there is nothing left there to stop."""
