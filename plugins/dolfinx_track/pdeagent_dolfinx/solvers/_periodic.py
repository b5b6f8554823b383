"""Periodic boundary conditions for the DOLFINx calibration/reference solvers.

DOLFINx has no built-in periodic constraint, so periodicity is imposed
algebraically: a prolongation ``P`` (n_full x n_reduced, one 1 per row) maps the
values of the independent ("reduced") degrees of freedom to all of them, every
dof on a ``partner`` boundary being identified with the dof on ``boundary`` that
sits one period away along the condition's axis (corner dofs are identified
along every periodic axis at once).  The linear system ``A u = b`` assembled by
DOLFINx is reduced to ``P^T A P y = P^T b`` and the solution is ``u = P y``, so
identified dofs carry bit-identical values.  Dirichlet conditions on the
non-periodic boundary parts are imposed on the reduced system (symmetric
elimination).

Runtime code inlined by ``pdeagent_dolfinx.bundle``: standard library, numpy,
scipy, petsc4py, ufl and dolfinx only; public names ``periodic_prolongation``,
``PeriodicLinearSystem`` and ``make_linear_system``, private helpers
``_periodic_*``.  Serial only (the runtime runs on one MPI rank).
"""

import dolfinx.fem.petsc as fem_petsc
import numpy as np
import scipy.sparse
import scipy.spatial
from dolfinx import fem
from petsc4py import PETSc

from ._common import COMM, DIRECT, LinearSystem

_PERIODIC_AXES = {"x": 0, "y": 1, "z": 2}


def _periodic_field(entry, name):
    value = entry.get(name) if isinstance(entry, dict) else getattr(entry, name, None)
    if value is None:
        raise ValueError(f"periodic condition {entry!r} has no {name!r}")
    return value


def _periodic_find(parent, i):
    root = i
    while parent[root] != root:
        root = parent[root]
    while parent[i] != root:  # path compression
        parent[i], i = root, parent[i]
    return root


def periodic_prolongation(V, domain, periodic_spec, *, rel_tol=1e-8):
    """The prolongation ``P`` (scipy CSR, n_full x n_reduced) of the periodic constraint
    ``bc.periodic`` on the (scalar or blocked Lagrange) space ``V``, and a dict of
    diagnostics.  Raises when the boundary and partner dofs cannot be matched one to
    one by a shift of one domain length along the axis (non-matching meshes)."""
    if COMM.size > 1:
        raise NotImplementedError("periodic conditions are implemented for serial runs only")
    if V.num_sub_spaces and V.dofmap.bs == 1:
        raise NotImplementedError("periodic conditions on mixed function spaces are not supported")
    entries = list(periodic_spec or [])
    if not entries:
        raise ValueError("periodic_prolongation needs at least one periodic condition")
    msh = domain.msh
    fdim = msh.topology.dim - 1
    bs = V.dofmap.index_map_bs
    n_nodes = V.dofmap.index_map.size_local + V.dofmap.index_map.num_ghosts
    X = V.tabulate_dof_coordinates()[:n_nodes]
    parent = np.arange(n_nodes)
    pairs = 0
    for entry in entries:
        axis_name = _periodic_field(entry, "axis")
        if axis_name not in _PERIODIC_AXES or _PERIODIC_AXES[axis_name] >= domain.dim:
            raise ValueError(f"periodic axis {axis_name!r} does not exist in {domain.dim}-D")
        axis = _PERIODIC_AXES[axis_name]
        tag_b = _periodic_field(entry, "boundary")
        tag_p = _periodic_field(entry, "partner")
        if tag_b == "all" or tag_p == "all" or tag_b == tag_p:
            raise ValueError(
                f"periodic condition {entry!r}: boundary and partner must be two "
                "different named boundary parts"
            )
        lo, hi = domain.bbox[axis]
        period = float(hi - lo)
        nodes_b = fem.locate_dofs_topological(V, fdim, domain.facets(tag_b))
        nodes_p = fem.locate_dofs_topological(V, fdim, domain.facets(tag_p))
        if len(nodes_b) == 0 or len(nodes_p) == 0:
            raise ValueError(f"periodic condition {entry!r}: a boundary part has no dofs")
        if len(nodes_b) != len(nodes_p):
            raise RuntimeError(
                f"periodic condition {entry!r}: {len(nodes_b)} dofs on {tag_b!r} but "
                f"{len(nodes_p)} on {tag_p!r}; the mesh is not periodic-conforming"
            )
        offset = X[nodes_p, axis].mean() - X[nodes_b, axis].mean()
        if abs(abs(offset) - period) > 1e-6 * period:
            raise ValueError(
                f"periodic condition {entry!r}: {tag_b!r} and {tag_p!r} are not opposite sides "
                f"one domain length ({period:g}) apart along {axis_name}"
            )
        shift = np.zeros(3)
        shift[axis] = np.sign(offset) * period
        tree = scipy.spatial.cKDTree(X[nodes_b])
        dist, idx = tree.query(X[nodes_p] - shift)
        tol = rel_tol * period
        if np.any(dist > tol) or len(np.unique(idx)) != len(idx):
            bad = int(np.sum(dist > tol))
            raise RuntimeError(
                f"periodic condition {entry!r}: {bad} dofs on {tag_p!r} have no partner on "
                f"{tag_b!r} (max mismatch {float(dist.max()):.3e}); non-matching mesh"
            )
        for p, b in zip(nodes_p, nodes_b[idx], strict=True):
            rp, rb = _periodic_find(parent, int(p)), _periodic_find(parent, int(b))
            if rp != rb:
                parent[max(rp, rb)] = min(rp, rb)
        pairs += len(nodes_p)
    roots = parent
    while True:  # pointer jumping to the root of every node's tree
        nxt = roots[roots]
        if np.array_equal(nxt, roots):
            break
        roots = nxt
    masters, node_class = np.unique(roots, return_inverse=True)
    n_red_nodes = len(masters)
    rows = (np.arange(n_nodes)[:, None] * bs + np.arange(bs)[None, :]).ravel()
    cols = (node_class[:, None] * bs + np.arange(bs)[None, :]).ravel()
    P = scipy.sparse.csr_matrix(
        (np.ones(len(rows)), (rows, cols)), shape=(n_nodes * bs, n_red_nodes * bs)
    )
    diag = {
        "periodic_pairs": int(pairs),
        "dofs_full": int(n_nodes * bs),
        "dofs_reduced": int(n_red_nodes * bs),
    }
    return P, diag


def _periodic_scipy_matrix(A):
    indptr, indices, data = A.getValuesCSR()
    n, m = A.getSize()
    return scipy.sparse.csr_matrix((data, indices, indptr), shape=(n, m))


class PeriodicLinearSystem:
    """``a(u, v) = L(v)`` with periodic conditions: same interface as ``LinearSystem``.

    Forms are compiled once; the full matrix is assembled by DOLFINx without boundary
    conditions, reduced to ``P^T A P`` (scipy) and, after symmetric elimination of the
    Dirichlet dofs, handed to a PETSc KSP (``petsc_options``; None = direct MUMPS
    solve, factorised once unless ``reassemble_matrix`` is set).  Every ``solve()``
    reassembles the right-hand side and re-reads the Dirichlet values (time-dependent
    data).  (MUMPS rather than scipy's SuperLU: splu was 3-7x slower on 2-D P2
    systems of 4e4-2.5e5 dofs.)
    """

    def __init__(
        self,
        a,
        L,
        bcs,
        u,
        *,
        domain,
        periodic,
        petsc_options=None,
        prefix="pdeagent_periodic_",
        reassemble_matrix=False,
    ):
        self.a = fem.form(a)
        self.L = fem.form(L)
        self.bcs = list(bcs)
        self.u = u
        self.reassemble_matrix = reassemble_matrix
        V = u.function_space
        self.P, self.diagnostics = periodic_prolongation(V, domain, periodic)
        self.PT = self.P.T.tocsr()
        n_full, n_red = self.P.shape
        self.bs = V.dofmap.index_map_bs
        if len(u.x.array) != n_full:
            raise RuntimeError("the solution vector does not match the periodic prolongation")
        # Dirichlet dofs: entries that bc.set() fills (works for sub-space conditions too)
        probe = np.full(n_full, np.nan)
        for bc in self.bcs:
            bc.set(probe)
        self._bc_full = np.flatnonzero(np.isfinite(probe))
        cls = self.P.indices  # one entry per row: the reduced dof of every full dof
        self._cls = cls
        self._bc_cls = cls[self._bc_full]
        self._bc_red = np.unique(self._bc_cls)
        self._bc_count = np.bincount(self._bc_cls, minlength=n_red)
        free = np.ones(n_red)
        free[self._bc_red] = 0.0
        self._free = scipy.sparse.diags(free)
        self._fixed = scipy.sparse.diags(1.0 - free)
        self.A = fem_petsc.create_matrix(self.a)
        self.b = fem_petsc.create_vector(self.L.function_spaces[0])
        self.ksp = PETSc.KSP().create(PETSc.COMM_SELF)
        self.ksp.setOptionsPrefix(prefix)
        opts = PETSc.Options()
        for key, value in (petsc_options or DIRECT).items():
            opts[f"{prefix}{key}"] = value
        self.ksp.setFromOptions()
        self.iterations = 0
        self.bc_mismatch = 0.0
        self._assemble_matrix()

    def _assemble_matrix(self):
        self.A.zeroEntries()
        fem_petsc.assemble_matrix(self.A, self.a)
        self.A.assemble()
        A_full = _periodic_scipy_matrix(self.A)
        self.A_red = (self.PT @ A_full @ self.P).tocsr()
        K = (self._free @ self.A_red @ self._free + self._fixed).tocsr()
        K.eliminate_zeros()
        self._check_nullspace(K)
        K.sort_indices()
        self.M = PETSc.Mat().createAIJ(
            size=K.shape, csr=(K.indptr, K.indices, K.data), comm=PETSc.COMM_SELF
        )
        self.M.assemble()
        self.ksp.setOperators(self.M)
        self._x = self.M.createVecRight()
        self._b = self.M.createVecLeft()

    def _check_nullspace(self, K):
        """Constants (per component) must not lie in the kernel: a purely periodic
        (and Neumann) problem without a Dirichlet/Robin/zero-order term is singular."""
        n = K.shape[0]
        absK = abs(K)
        for c in range(self.bs):
            e = np.zeros(n)
            e[c :: self.bs] = 1.0
            scale = np.linalg.norm(absK @ e)
            if scale > 0 and np.linalg.norm(K @ e) <= 1e-10 * scale:
                raise RuntimeError(
                    "periodic system is singular: constants are in its null space (no "
                    "Dirichlet or Robin part and no zero-order term fixes the solution)"
                )

    def _dirichlet_values(self, n_red):
        """Reduced Dirichlet values: the mean over the full dofs of each reduced dof."""
        g_red = np.zeros(n_red)
        if len(self._bc_full) == 0:
            return g_red
        full = np.zeros(len(self.u.x.array))
        for bc in self.bcs:
            bc.set(full)
        g = full[self._bc_full]
        sums = np.bincount(self._bc_cls, weights=g, minlength=n_red)
        g_red[self._bc_red] = sums[self._bc_red] / self._bc_count[self._bc_red]
        spread = np.abs(g - g_red[self._bc_cls])
        self.bc_mismatch = max(self.bc_mismatch, float(spread.max()) if len(spread) else 0.0)
        return g_red

    def solve(self):
        if self.reassemble_matrix:
            self._assemble_matrix()
        with self.b.localForm() as local:
            local.set(0.0)
        fem_petsc.assemble_vector(self.b, self.L)
        self.b.ghostUpdate(addv=PETSc.InsertMode.ADD, mode=PETSc.ScatterMode.REVERSE)
        n_red = self.P.shape[1]
        g_red = self._dirichlet_values(n_red)
        rhs = self.PT @ self.b.array_r - self.A_red @ g_red
        rhs[self._bc_red] = g_red[self._bc_red]
        self._b.array[:] = rhs
        self.ksp.solve(self._b, self._x)
        reason = self.ksp.getConvergedReason()
        if reason <= 0:
            raise RuntimeError(f"linear solver did not converge (KSP reason {reason})")
        self.iterations += self.ksp.getIterationNumber()
        y = self._x.array_r
        if not np.all(np.isfinite(y)):
            raise RuntimeError("periodic solve produced non-finite values")
        self.u.x.array[:] = self.P @ y
        self.u.x.scatter_forward()
        return self.u

    def info(self):
        out = {"ksp_type": self.ksp.getType(), "pc_type": self.ksp.getPC().getType()}
        out["linear_iterations"] = int(self.iterations)
        out["periodic"] = {**self.diagnostics, "dirichlet_mismatch": self.bc_mismatch}
        return out


def make_linear_system(a, L, bcs, u, domain, bc_spec, **kw):
    """``PeriodicLinearSystem`` when ``bc_spec`` has periodic entries, else ``LinearSystem``
    (same keyword arguments: petsc_options, prefix, reassemble_matrix)."""
    periodic = (bc_spec or {}).get("periodic") or []
    if periodic:
        return PeriodicLinearSystem(a, L, bcs, u, domain=domain, periodic=periodic, **kw)
    return LinearSystem(a, L, bcs, u, **kw)
