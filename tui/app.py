"""`delta-forensics tui TABLE`: browse a Delta table's versions, concurrency windows and conflicts.

The App is small on purpose: the main screen, the keys that work everywhere (quit, help, the
command palette) and the one worker that opens the table. Opening never blocks the screen: the
worker reads the Parquet cache (no JVM); only a cache miss starts Spark, and the header says so.
Everything else (replay, explanations, read/write sets, views, export) belongs to the widget or
screen that shows it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from textual import work
from textual.app import App
from textual.binding import Binding

from forensics import Table, error_line, fewer_collections
from forensics.times import utc_default
from tui.commands import ForensicsCommands
from tui.messages import ListingReady, LoadState, Reload, TableFailed, TableLoaded
from tui.screens.help import HelpScreen, active_keys
from tui.screens.main import MainScreen

if TYPE_CHECKING:
    from tui.data import Rows


class ForensicsApp(App[int]):
    """The table browser for `location`. `table` may be given already open (tests, notebooks)."""

    TITLE = "delta-forensics"
    CSS_PATH = "app.tcss"
    COMMANDS = App.COMMANDS | {ForensicsCommands}
    BINDINGS = [
        Binding("ctrl+q", "quit", "quit", priority=True, show=False),
        Binding("question_mark,f1", "help", "help"),
    ]

    def __init__(
        self,
        location: str,
        *,
        utc: bool = False,
        use_cache: bool = True,
        replay: bool = True,
        master: str | None = None,
        remote: str | None = None,
        spark_factory: Callable[[], Any] | None = None,
        table: Table | None = None,
        display_name: str | None = None,
    ) -> None:
        super().__init__()
        self.location = location
        self.display_name = display_name or location
        self.utc = utc or utc_default()
        self.use_cache = use_cache
        self.replay = replay
        self.master, self.remote = master, remote
        self.spark_factory = spark_factory  # a SparkSession maker for a cache miss (tests); else master/remote
        self._preloaded = table
        self._main: MainScreen | None = None

    def get_default_screen(self) -> MainScreen:
        self._main = MainScreen(self.location, self.display_name, utc=self.utc, replay=self.replay)
        return self._main

    def on_mount(self) -> None:
        self.open_table()

    def on_reload(self, _: Reload) -> None:
        self._preloaded = None
        self.open_table()

    @work(thread=True, exclusive=True, group="open")
    def open_table(self) -> None:
        """List `_delta_log` and read the cache; start Spark only on a cache miss, off the UI thread.
        The collector is held back meanwhile (100k listed versions are 100k objects: each full pass
        over the heap would stall the first paint, as the CLI's commands avoid too)."""
        with fewer_collections():
            self._open_table()

    def _open_table(self) -> None:
        main = self._main
        assert main is not None
        try:
            table, how = self._preloaded, "from cache"
            if table is not None:
                how = "from cache" if table.read_from_cache else "read with Spark"
            else:
                table = self._listed_then_cached(main)
            if table is None:
                main.post_message(LoadState("spark"))
                table = Table(
                    self.location,
                    use_cache=self.use_cache,
                    spark=self.spark_factory() if self.spark_factory else None,
                    master=self.master,
                    remote=self.remote,
                    progress=lambda note: main.post_message(LoadState("spark", note)),
                )
                how = "read with Spark"
        except Exception as e:  # noqa: BLE001 - a ForensicsError as documented, anything else with its type; the app stays usable
            main.post_message(TableFailed(error_line(e)))
            return
        main.post_message(TableLoaded(table, how))

    def _listed_then_cached(self, main: MainScreen) -> Table | None:
        """Post the listed versions, their names first (one directory read, 0.07 s at 100k
        commits), then with their files' times, so rows show before the cache or the parse is
        read; then the cached table, or None. When something is cached, the listing that judges
        the cache gives the times (one listing, not two: 0.4 s sooner at 100k commits)."""
        names = listing_rows(self.location, times=False)
        timed = False

        def listed(commits: list[tuple[int, int]]) -> None:
            nonlocal timed
            timed = True
            if commits:
                main.post_message(ListingReady(rows_of(commits)))

        if names is not None:
            main.post_message(ListingReady(names))
        table = Table.from_cache(self.location, listed=listed) if self.use_cache else None
        if table is None and names is not None and not timed and (rows := listing_rows(self.location)) is not None:
            main.post_message(ListingReady(rows))
        return table

    def action_help(self) -> None:
        """Help for the focused widget, then every key active on this screen."""
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen.focused, active_keys(self, self.screen)))


def listing_rows(location: str, *, times: bool = True) -> "Rows | None":
    """The versions a local table's log lists, at their files' times unless `times` is False (no
    JVM); None for a remote table (the header shows progress instead) or one that cannot be listed
    (the full open reports it)."""
    listed = Table.listed_commits(location, times=times)
    return rows_of(listed) if listed else None


def rows_of(listed: list[tuple[int, int | None]]) -> "Rows":
    """The provisional rows of listed commits (imported here: the app's start does not wait for it)."""
    from tui.data import Rows

    return Rows.from_listing(listed)
