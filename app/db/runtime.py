"""The database as the application sees it: where it is, its schema, a pool, tenants.

Three connection identities, never mixed:
- the *migrator* (embedded: the ``postgres`` superuser over the private socket;
  external: the ``DATABASE_URL`` user) creates extensions, runs migrations,
  provisions graphs and manages API keys;
- the *app role* (``database.app_role``) runs every tenant query, with row-level
  security keyed on ``elephant.tenant_id``;
- the *worker role* (``database.worker_role``) may only claim jobs, for every
  tenant; the job itself then runs as the app role inside its tenant.
Embedded, the roles log in directly; external, each pool does ``SET ROLE`` on
every new connection, unless ``database.app_url`` / ``worker_url`` let the roles log
in themselves.

Behind a transaction pooler (``database.pooler = transaction``) a server connection
serves another client after each transaction, so nothing is set per session: every
app and worker transaction starts with its own ``set_config(..., true)`` (statement
timeout, time zone), the roles are the logins, and nothing is prepared on the server.
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeAlias, TypedDict

import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg_pool import ConnectionPool

from app.config import DatabaseSettings, Settings, validate_tenant_id
from app.db import lock_waits, migrate, sizing
from app.db.capabilities import Capabilities, detect
from app.db.embedded import SUPERUSER, EmbeddedPostgres
from app.db.keyword_index import KeywordIndexGuard, Repairs
from app.db.recovery import RETRY_AFTER_S, Recovery
from app.db.replicas import Consistency, ReplicaSet, ReplicaState, ReplicaUnavailable
from app.db.resources import load_sql
from app.errors import ConfigError, Conflict, DatabaseUnavailable, InvalidInput, SchemaMismatch

log = logging.getLogger(__name__)

TENANT_SETTING = "elephant.tenant_id"
_OPEN_TENANT = "set_config(%s, %s, true)"
# A read transaction: read only (on the primary too), scoped to the tenant like tenant().
_OPEN_READ = "set_config('transaction_read_only', 'on', true), set_config(%s, %s, true)"
# Behind a transaction pooler, what a session would carry, set in each transaction instead.
_LOCAL_APP = (
    "set_config('statement_timeout', %s, true), set_config('lock_timeout', %s, true), "
    "set_config('TimeZone', 'UTC', true)"
)
_LOCAL_WORKER = "set_config('lock_timeout', %s, true), set_config('TimeZone', 'UTC', true)"
Connection = psycopg.Connection[tuple[Any, ...]]
_OPENED = itertools.count(1)  # numbers the Database objects of a process (application_name)
SQLParams: TypeAlias = Mapping[str, object]  # a statement's named parameters, %(name)s


class ConnectArgs(TypedDict, total=False):  # what connect_kwargs sets of psycopg's arguments
    prepare_threshold: int | None


def connect_kwargs(options: DatabaseSettings) -> ConnectArgs:
    """psycopg's connection arguments: ``prepare_threshold=None`` turns server-side
    prepared statements off, ``prepare=True`` included (database.prepared_statements)."""
    return {} if options.prepares else {"prepare_threshold": None}


@dataclass(frozen=True)
class SchemaInfo:
    revision: str | None
    head: str
    embedding_model: str | None
    embedding_dim: int | None

    @property
    def up_to_date(self) -> bool:
        return self.revision == self.head


class Database:
    """``keyword_repairs``: who repairs the BM25 indexes (app/db/keyword_index.py): ``here``
    (this thread, at open), ``background`` (a serving process: its start never waits on
    a rebuild) or ``report`` (a CLI command beside a server: never rebuilds an index nor
    ends another process's session; it repairs only on a server it started itself)."""

    def __init__(self, settings: Settings, *, keyword_repairs: Repairs = "here") -> None:
        self.settings = settings
        # Every connection of this object says whose it is (pg_stat_activity): a rebuild
        # elsewhere spares none of them, a rebuild here drains its own pools instead.
        self.application_name = f"elephant {os.getpid()}.{next(_OPENED)}"
        self.keyword_repairs: Repairs = keyword_repairs
        self.embedded: EmbeddedPostgres | None = None
        self.capabilities: Capabilities | None = None
        self._pool: ConnectionPool[Connection] | None = None
        self._worker_pool: ConnectionPool[Connection] | None = None
        self._replicas: ReplicaSet | None = None
        self._known_tenants: set[str] = set()
        self.recovery = Recovery(self._probe, self._revive, self._back)
        self.keyword = KeywordIndexGuard(
            self._admin_connection,
            rebuild_on_restart=settings.search.bm25_rebuild_on_restart,
            spare=self.application_name,
            on_rebuilt=self._drain_pools,
        )
        self._lock = threading.Lock()
        self.pooled = settings.database.transaction_pooled

    # ------------------------------------------------------------ lifecycle

    @property
    def mode(self) -> str:
        return "embedded" if self.settings.uses_embedded else "external"

    def start_server(self) -> None:
        """Start (or adopt) the embedded server and create its database; no-op when external."""
        if not self.settings.uses_embedded or self.embedded is not None:
            return
        options = self.settings.embedded
        self.embedded = EmbeddedPostgres(
            self.settings.data_dir / "embedded",
            port=options.port,
            tcp=options.tcp,
            password=options.password,
            start_timeout_s=options.start_timeout_s,
            memory=sizing.choose(
                sizing.machine_memory_bytes(),
                share=options.memory_share,
                shared_buffers_mb=options.shared_buffers_mb,
                effective_cache_size_mb=options.effective_cache_size_mb,
                maintenance_work_mem_mb=options.maintenance_work_mem_mb,
            ),
            analyst_group=self.settings.database.analyst_group,
        )
        self.embedded.start()
        with psycopg.connect(self.embedded.conninfo(), autocommit=True) as conn:
            exists = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (options.database,)
            ).fetchone()
            if not exists:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(options.database)))

    def open(self, *, migrate_schema: bool | None = None) -> None:
        """Reach the database, check it, migrate if configured, and open the pool."""
        self.start_server()
        with self.admin_connection() as conn:
            self.capabilities = detect(conn)
        self.capabilities.require_pgvector()
        if self.settings.database.auto_migrate if migrate_schema is None else migrate_schema:
            self.migrate(if_needed=True)  # at head with today's objects: no lock taken
        self._check_schema()
        if self.embedded is not None:
            self._enable_app_login()
        with self.admin_connection() as conn:
            self.capabilities = detect(conn)
        self._check_logins()
        if self.capabilities.textsearch:  # "here": before this process opens a pool
            self.keyword.at_start(self._repairs_here())
        self._pool = self._open_pool(
            self.app_conninfo(),
            self._configure_connection,
            (self.settings.database.pool_min_size, self.settings.database.pool_max_size),
            "elephant",
        )
        if self.settings.database.replica_urls:  # never migrated nor checked: read-only copies
            self._replicas = ReplicaSet(
                self.settings.database.replica_urls,
                self.settings.database,
                self._configure_replica_connection,
            )

    def _repairs_here(self) -> Repairs:
        """``report`` becomes ``here`` for a process that started the embedded server
        itself: nobody else uses it, so nobody else would repair it."""
        alone = self.embedded is not None and not self.embedded.adopted
        return "here" if self.keyword_repairs == "report" and alone else self.keyword_repairs

    def _drain_pools(self) -> None:
        """After a BM25 rebuild by this process: replace its pooled connections (those in
        use once returned), which may hold pg_textsearch's pre-rebuild state."""
        for pool in (self._pool, self._worker_pool):
            if pool is not None:
                pool.drain()

    def _open_pool(
        self,
        conninfo: str,
        configure: Callable[[Connection], None],
        sizes: tuple[int, int],
        name: str,
    ) -> ConnectionPool[Connection]:
        timeout = self.settings.database.connect_timeout_s
        pool: ConnectionPool[Connection] = ConnectionPool(
            conninfo,
            min_size=sizes[0],
            max_size=sizes[1],
            timeout=timeout,
            kwargs={
                **connect_kwargs(self.settings.database),
                "application_name": self.application_name,
            },
            configure=configure,
            check=ConnectionPool.check_connection,
            open=False,
            name=name,
        )
        pool.open(wait=True, timeout=timeout)
        return pool

    def close(self) -> None:
        self.keyword.close()
        self.recovery.close()
        if self._replicas is not None:
            self._replicas.close()
            self._replicas = None
        for pool in (self._worker_pool, self._pool):
            if pool is not None:
                pool.close()
        self._pool = self._worker_pool = None
        if self.embedded is not None:
            self.embedded.release()
            self.embedded = None

    def __enter__(self) -> Database:
        self.open()
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # ------------------------------------------------------------ connections

    def admin_conninfo(self) -> str:
        if self.settings.database.url is not None:
            return self.settings.database.url
        assert self.embedded is not None, "start_server() first"
        return self.embedded.conninfo(SUPERUSER, self.settings.embedded.database)

    def app_conninfo(self) -> str:
        return self._role_conninfo(self.settings.database.app_role)

    def _role_conninfo(self, role: str) -> str:
        options = self.settings.database
        own = {options.app_role: options.app_url, options.worker_role: options.worker_url}
        url = own.get(role)
        if url is not None:
            return url
        if self.embedded is not None:
            return self.embedded.conninfo(role, self.settings.embedded.database)
        return self.admin_conninfo()

    def _logs_in(self, role: str) -> bool:
        """Whether the pool of ``role`` connects as that role (else it does SET ROLE)."""
        options = self.settings.database
        own = {options.app_role: options.app_url, options.worker_role: options.worker_url}
        return self.embedded is not None or own.get(role) is not None

    def session_conninfo(self) -> str:
        """A connection that may keep session state (LISTEN): the app role's, unless a
        transaction pooler sits in between; then the migrator's direct database.url."""
        return self.admin_conninfo() if self.pooled else self.app_conninfo()

    @property
    def lock_timeout_ms(self) -> int:
        """The bound of the app's lock waits (database.lock_timeout_ms; app/db/lock_waits.py)."""
        return self.settings.database.lock_timeout_ms

    def _lock_timeout(self) -> str:
        return f"{self.lock_timeout_ms}ms"

    @contextmanager
    def admin_connection(self) -> Iterator[Connection]:
        """A migrator connection (autocommit). A transaction on it bounds its own lock
        waits (lock_waits.bound); one that times out is a 503 with Retry-After."""
        self.recovery.check_up()
        with self._admin_connection() as conn:
            try:
                yield conn
            except psycopg.errors.LockNotAvailable:
                raise lock_waits.busy("the operation", self.lock_timeout_ms) from None

    @contextmanager
    def _admin_connection(self) -> Iterator[Connection]:
        try:
            conn = psycopg.connect(
                self.admin_conninfo(),
                autocommit=True,
                connect_timeout=int(self.settings.database.connect_timeout_s),
                application_name=self.application_name,
            )
        except psycopg.OperationalError as exc:
            self.recovery.failed()
            raise DatabaseUnavailable(
                f"cannot connect to the database: {exc}".strip(), retry_after_s=RETRY_AFTER_S
            ) from None
        with conn:
            yield conn

    @property
    def is_open(self) -> bool:
        """Opened and not closed yet (its pool exists)."""
        return self._pool is not None

    @property
    def pool(self) -> ConnectionPool[Connection]:
        if self._pool is None:
            raise DatabaseUnavailable("the database is not open")
        return self._pool

    @contextmanager
    def connection(self, *, snapshot: bool = False) -> Iterator[Connection]:
        """One app-role transaction with no tenant: sees shared tables only (meta, versions,
        keys through their functions). The pool commits it on success, rolls it back on an
        error. Behind a transaction pooler it opens with the transaction-local settings.
        ``snapshot``: REPEATABLE READ, READ ONLY (which must precede any other statement)."""
        with self._pooled(self.pool) as conn:
            if snapshot:
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            self._begin(conn)
            yield conn

    def _begin(
        self,
        conn: Connection,
        first: str = "",
        params: Sequence[object] = (),
        *,
        worker: bool = False,
    ) -> None:
        """The first statement of a transaction: ``first`` (``set_config`` calls) and, behind
        a transaction pooler, what a session would carry otherwise, in one round trip."""
        parts, args = ([first], list(params)) if first else ([], [])
        if self.pooled and worker:
            parts.append(_LOCAL_WORKER)
            args.append(self._lock_timeout())
        elif self.pooled:
            parts.append(_LOCAL_APP)
            args += [str(self.settings.database.statement_timeout_ms), self._lock_timeout()]
        if parts:
            conn.execute("SELECT " + ", ".join(parts), args)

    @contextmanager
    def _pooled(self, pool: ConnectionPool[Connection]) -> Iterator[Connection]:
        """A pooled connection; a broken one starts recovery, and while the database is known
        to be down this fails at once (503 with Retry-After) instead of waiting."""
        self.recovery.check_up()
        try:
            with pool.connection() as conn:
                yield conn
        except psycopg.OperationalError as exc:
            if isinstance(exc, psycopg.errors.QueryCanceled):  # statement timeout: not an outage
                raise DatabaseUnavailable(f"database unavailable: {exc}".strip()) from None
            if isinstance(exc, psycopg.errors.LockNotAvailable):  # held elsewhere: not an outage
                raise lock_waits.busy("the request", self.lock_timeout_ms) from None
            self.recovery.failed()
            raise DatabaseUnavailable(
                f"database unavailable: {exc}".strip(), retry_after_s=RETRY_AFTER_S
            ) from None

    # ------------------------------------------------------------ recovery

    def _probe(self) -> None:
        with psycopg.connect(self.app_conninfo(), connect_timeout=2) as conn:
            conn.execute("SELECT 1")

    def _revive(self) -> bool:
        return self.embedded.revive() if self.embedded is not None else False

    def _back(self, restarted: bool) -> None:
        if restarted and self.capabilities is not None and self.capabilities.textsearch:
            self.keyword.at_start()  # a new server start: rebuilt as this process repairs
        for pool in (self._pool, self._worker_pool):
            if pool is not None:
                pool.check()  # drop the broken connections, open new ones

    @contextmanager
    def worker_connection(self) -> Iterator[Connection]:
        """One worker-role transaction (the pool commits it on success): it can claim jobs
        of every tenant and read nothing else."""
        with self._lock:
            if self._worker_pool is None:
                self._worker_pool = self._open_pool(
                    self._role_conninfo(self.settings.database.worker_role),
                    self._configure_worker_connection,
                    (1, 2),
                    "elephant-worker",
                )
        with self._pooled(self._worker_pool) as conn:
            self._begin(conn, worker=True)
            yield conn

    def _configure_worker_connection(self, conn: Connection) -> None:
        if not self.pooled:  # pooled: each transaction sets its own (_begin)
            role = self.settings.database.worker_role
            if not self._logs_in(role):
                conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(role)))
            conn.execute(
                "SELECT set_config('TimeZone', 'UTC', false), "
                "set_config('lock_timeout', %s, false)",
                (self._lock_timeout(),),
            )
        conn.commit()

    def forget_tenant(self, tenant_id: str) -> None:
        """After a tenant was erased: its row must be created again on next use."""
        with self._lock:
            self._known_tenants.discard(tenant_id)

    @contextmanager
    def tenant(self, tenant_id: str, *, create: bool = True) -> Iterator[Connection]:
        """One transaction scoped to a tenant by row-level security; commits on success.
        A request's first write creates the tenant's row; ``create=False`` (a queued job)
        never does, so a job that ends after its tenant was erased cannot bring it back."""
        try:
            validate_tenant_id(tenant_id)
        except ValueError as exc:
            raise InvalidInput(str(exc)) from None
        created = False
        try:
            with self._pooled(self.pool) as conn, conn.transaction():
                self._begin(conn, _OPEN_TENANT, (TENANT_SETTING, tenant_id))
                if create and tenant_id not in self._known_tenants:
                    conn.execute(
                        "INSERT INTO tenants (id) VALUES (%s) ON CONFLICT (id) DO NOTHING",
                        (tenant_id,),
                    )
                    created = True
                yield conn
            if created:  # only once the row is committed: a rolled-back first request
                with self._lock:  # must not leave the tenant "known" but absent
                    self._known_tenants.add(tenant_id)
        except psycopg.errors.ForeignKeyViolation as exc:
            if '"tenants"' not in str(exc.diag.message_detail or ""):
                raise
            # The tenant was erased (by another process) after this one last saw it.
            self.forget_tenant(tenant_id)
            raise Conflict(
                f"tenant {tenant_id!r} was erased while this request ran; retry to start it afresh"
            ) from None

    @contextmanager
    def provisioned_tenant(
        self, tenant_id: str, provision: Callable[[Connection], None]
    ) -> Iterator[Connection]:
        """:meth:`tenant` and what only the migrator may create for the tenant (``provision``:
        its AGE graph) in one transaction, for a write that must land whole or not at all
        (an import): a failure leaves no tenant row, no graph and no row anywhere.

        The transaction begins as the migrator, which runs ``provision``, then continues
        as the app role (``SET LOCAL ROLE``; the migrator is a superuser or a member of
        it, as the external pools' ``SET ROLE`` needs), scoped to the tenant by row-level
        security with the app connections' settings; it commits on success. AGE's
        create_graph is catalog work like any DDL: a rollback takes the graph back too.
        """
        try:
            validate_tenant_id(tenant_id)
        except ValueError as exc:
            raise InvalidInput(str(exc)) from None
        options = self.settings.database
        age = self.capabilities is not None and self.capabilities.age
        with self.admin_connection() as conn, conn.transaction():
            # Row-level security may apply to the migrator (external mode, FORCE): scope it.
            conn.execute("SELECT set_config(%s, %s, true)", (TENANT_SETTING, tenant_id))
            provision(conn)
            if age and "age" not in self.capabilities_preloaded():
                conn.execute("LOAD 'age'")  # the migrator's right, as _configure_session
            conn.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(options.app_role)))
            conn.execute(  # the tenant, and what an app session carries (as _begin, pooled)
                "SELECT " + ", ".join((_OPEN_TENANT, _LOCAL_APP)),
                (
                    TENANT_SETTING,
                    tenant_id,
                    str(options.statement_timeout_ms),
                    self._lock_timeout(),
                ),
            )
            if age:
                conn.execute(
                    "SELECT set_config('search_path', '\"$user\", public, ag_catalog', true)"
                )
            register_vector(conn)
            conn.execute(
                "INSERT INTO tenants (id) VALUES (%s) ON CONFLICT (id) DO NOTHING", (tenant_id,)
            )
            yield conn
        with self._lock:  # committed: the row exists
            self._known_tenants.add(tenant_id)

    # ------------------------------------------------------------ reads (replicas)

    @contextmanager
    def reading(self, tenant_id: str, consistency: Consistency = "replica") -> Iterator[Connection]:
        """A READ ONLY transaction scoped to a tenant as :meth:`tenant` scopes it: on a
        replica when one is configured, healthy and ``consistency`` allows it, else on the
        primary.

        A replica lags the primary (at most ``database.replica_max_lag_s``): a caller that
        must see its own writes asks for ``primary``. Read only on the primary too, so a
        write slipped into a read path fails in every test, not only behind a replica.
        Creates no tenant row: an unknown tenant reads as empty. A replica that fails under
        the read raises :class:`ReplicaUnavailable` (503, Retry-After; the next read goes
        elsewhere); a caller that can run its read again does so on the primary.
        """
        try:
            validate_tenant_id(tenant_id)
        except ValueError as exc:
            raise InvalidInput(str(exc)) from None
        if consistency not in ("replica", "primary"):
            raise InvalidInput(f"consistency must be replica or primary, not {consistency!r}")
        replicas = self._replicas if consistency == "replica" else None
        lease = None if replicas is None else replicas.acquire()
        if replicas is None or lease is None:
            with self._pooled(self.pool) as conn, conn.transaction():
                self._begin(conn, _OPEN_READ, (TENANT_SETTING, tenant_id))
                yield conn
            return
        served = False
        try:
            with lease.conn.transaction():
                self._begin(lease.conn, _OPEN_READ, (TENANT_SETTING, tenant_id))
                yield lease.conn
            served = True
        except psycopg.errors.QueryCanceled as exc:  # statement timeout, as on the primary
            raise DatabaseUnavailable(f"database unavailable: {exc}".strip()) from None
        except psycopg.errors.LockNotAvailable:  # a lock held past the bound: not a failure
            raise lock_waits.busy("the read", self.lock_timeout_ms) from None
        except psycopg.OperationalError as exc:
            replicas.failed(lease, exc)
            raise ReplicaUnavailable(
                f"read replica {lease.replica.name} failed: {exc}".strip(),
                retry_after_s=RETRY_AFTER_S,
            ) from None
        finally:
            replicas.release(lease, served=served)

    def replica_of(self, conn: Connection) -> str | None:
        """The replica a connection from :meth:`reading` is on, or None (the primary)."""
        return None if self._replicas is None else self._replicas.replica_of(conn)

    @property
    def has_replicas(self) -> bool:
        return self._replicas is not None

    def replica_states(self) -> list[ReplicaState]:
        """Each configured replica: healthy or why not, and the reads it served."""
        return [] if self._replicas is None else self._replicas.states()

    def _configure_replica_connection(self, conn: Connection) -> None:
        """Set up like the primary's app connections, but a replica URL names its own user:
        the role is always set (app_url is the primary's). Behind a transaction pooler the
        replica URL must log in as the app role itself."""
        if self.pooled:
            self._check_login(conn, self.settings.database.app_role, "a replica URL")
            self._configure_connection(conn)
        else:
            self._configure_session(conn, set_role=True)

    def _configure_connection(self, conn: Connection) -> None:
        if self.pooled:  # nothing may outlive a transaction: each one sets its own (_begin)
            register_vector(conn)
            conn.commit()
            return
        self._configure_session(conn, set_role=not self._logs_in(self.settings.database.app_role))

    def _configure_session(self, conn: Connection, *, set_role: bool) -> None:
        """The session settings of an app connection (never behind a transaction pooler)."""
        age = self.capabilities is not None and self.capabilities.age
        if set_role:
            if age and "age" not in self.capabilities_preloaded():
                # AGE must be loaded in every session unless the server preloads it;
                # LOAD needs the connecting (not the app) role's rights.
                conn.execute("LOAD 'age'")
            conn.execute(
                sql.SQL("SET ROLE {}").format(sql.Identifier(self.settings.database.app_role))
            )
        # Times leave the database in UTC (the API writes them with Z) whatever the server's zone.
        conn.execute("SELECT set_config('TimeZone', 'UTC', false)")
        if age:
            # Cypher resolves AGE's functions through the search path; ag_catalog goes last.
            conn.execute("SELECT set_config('search_path', '\"$user\", public, ag_catalog', false)")
        conn.execute(
            "SELECT set_config('statement_timeout', %s, false), "
            "set_config('lock_timeout', %s, false)",
            (str(self.settings.database.statement_timeout_ms), self._lock_timeout()),
        )
        register_vector(conn)
        conn.commit()

    def capabilities_preloaded(self) -> tuple[str, ...]:
        return () if self.capabilities is None else self.capabilities.preloaded

    # ------------------------------------------------------------ logins

    def _check_logins(self) -> None:
        """A role URL (app_url, worker_url) must log in as exactly its role: row-level
        security needs the app role to be neither superuser nor BYPASSRLS, and behind a
        transaction pooler no SET ROLE could fix a wrong login."""
        options = self.settings.database
        for role, url, key in (
            (options.app_role, options.app_url, "database.app_url"),
            (options.worker_role, options.worker_url, "database.worker_url"),
        ):
            if url is None:
                continue
            try:
                conn = psycopg.connect(
                    url,
                    connect_timeout=int(options.connect_timeout_s),
                    **connect_kwargs(options),
                )
            except psycopg.OperationalError as exc:
                raise DatabaseUnavailable(
                    f"cannot connect through {key}: {exc}".strip(), retry_after_s=RETRY_AFTER_S
                ) from None
            with conn:
                self._check_login(conn, role, key)

    def _check_login(self, conn: Connection, role: str, key: str) -> None:
        """Refuse (ConfigError) a login that is not ``role`` or that bypasses row-level
        security."""
        row = conn.execute(load_sql("db/login_role.sql")).fetchone()
        conn.rollback()
        assert row is not None
        login, current, superuser, bypass = row
        why = None
        if superuser:
            why = "is a superuser"
        elif bypass:
            why = "has BYPASSRLS"
        elif login != role or current != role:
            runs_as = f" (it runs as {current})" if current != login else ""
            why = f"is not the role {role}{runs_as}"
        if why is not None:
            raise ConfigError(
                f"{key} logs in as {login}, which {why}: it must log in as {role} itself "
                "(row-level security applies to it; no SET ROLE survives a transaction pooler). "
                f"Give {role} a login (ALTER ROLE {role} LOGIN PASSWORD '...') and name it there"
            )

    # ------------------------------------------------------------ schema

    def schema_params(self) -> migrate.SchemaParams:
        return migrate.SchemaParams(
            embedding_dim=self.settings.embedding.dim,
            embedding_model=self.settings.embedding.model,
            app_role=self.settings.database.app_role,
            worker_role=self.settings.database.worker_role,
            optional_extensions=self.settings.database.optional_extensions,
        )

    def migrate(self, target: str = "head", *, if_needed: bool = False) -> None:
        migrate.upgrade(self.admin_conninfo(), self.schema_params(), target, if_needed=if_needed)

    def downgrade(self, target: str = "base") -> None:
        migrate.downgrade(self.admin_conninfo(), self.schema_params(), target)

    def schema_info(self, conn: Connection | None = None) -> SchemaInfo:
        if conn is None:
            with self.admin_connection() as admin:
                return self.schema_info(admin)
        revision = None
        model = dim = None
        has_version = conn.execute("SELECT to_regclass('alembic_version') IS NOT NULL").fetchone()
        if has_version and has_version[0]:
            row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
            revision = row[0] if row else None
        has_meta = conn.execute("SELECT to_regclass('elephant_meta') IS NOT NULL").fetchone()
        if has_meta and has_meta[0]:
            meta = conn.execute(
                "SELECT embedding_model, embedding_dim FROM elephant_meta"
            ).fetchone()
            if meta:
                model, dim = meta
        return SchemaInfo(revision, migrate.head_revision(), model, dim)

    def _check_schema(self) -> None:
        info = self.schema_info()
        if not info.up_to_date:
            raise SchemaMismatch(
                f"the database schema is at {info.revision or 'nothing'} but this build needs "
                f"{info.head}: run `elephant migrate`"
            )
        if info.embedding_dim != self.settings.embedding.dim:
            raise SchemaMismatch(
                f"the database was initialised for {info.embedding_dim}-d embeddings "
                f"({info.embedding_model}) but embedding.dim is {self.settings.embedding.dim}: "
                "set embedding.dim/embedding.model back, or use a new database"
            )

    def _enable_app_login(self) -> None:
        """Embedded: the app and worker roles log in over the private socket (the app role
        also over TCP, with its password, when tcp is on)."""
        assert self.embedded is not None
        role = sql.Identifier(self.settings.database.app_role)
        statement = sql.SQL("ALTER ROLE {} LOGIN").format(role)
        if self.embedded.tcp:
            statement = sql.SQL("ALTER ROLE {} LOGIN PASSWORD {}").format(
                role, sql.Literal(self.embedded.password)
            )
        worker = sql.Identifier(self.settings.database.worker_role)
        with self.admin_connection() as conn:
            conn.execute(statement)
            conn.execute(sql.SQL("ALTER ROLE {} LOGIN").format(worker))
