"""Every numeric setting of the package, named and documented, in one place.

Thresholds, block sizes, budgets and ladders that the solvers, the
certificates and the data layers use, grouped by the module that reads
them (each module imports its own under the name it uses).  The
tolerances that judge results -- how close a fast solver must come to the
certified optimum -- are :data:`cvxmetric._tolerances.TOLERANCES`; the
solvers' own parameters (``tol``, ``maxiter``, ...) are their declared
fields.  Settings documented here are not part of the public API unless
a module re-exports them (``cvxmetric.slr.EXACT_MAX_COEFFICIENTS``).
"""

# --- cvxmetric/_base.py ----------------------------------------------------

#: :meth:`LabelledMixin.score` uses every pair it defines up to this many
#: pairs, a uniform sample of this many beyond.
MAX_SCORE_PAIRS = 2_000_000

#: Largest number of training samples a ``fit(X, y)`` learner keeps as the
#: reference set of :meth:`LabelledMixin.score` (a class-stratified sample
#: beyond; with more classes than this, one sample of each).
MAX_SCORE_REFERENCE = 1_000

#: Pairs whose distances are computed at once in :meth:`LabelledMixin.score`
#: (bounds its memory to this many rows of the embedding).
_SCORE_CHUNK = 65_536


# --- cvxmetric/_certify.py ------------------------------------------------

#: Rounds of (close the dual's residual exactly, project on the dual cone)
#: the certificate alternates, keeping the best bound.
CLOSE_ROUNDS = 4


# --- cvxmetric/_bounds.py -------------------------------------------------

#: Rounds of interval propagation a certificate runs to bound a problem's
#: variables (each a few sparse passes over the rows; it stops earlier
#: once no bound moves by a relative 1e-9).
BOUND_ROUNDS = 60

#: Artificial bounds ``+-B`` tried, as ``B = span * 2**k`` for these ``k``
#: (``span`` the largest magnitude already known), on variables that
#: interval propagation alone leaves unbounded (:meth:`BoundSystem._probe`).
BOUND_PROBES = (10, 30)

#: Largest number of columns of a PSD block (or of the quadratic term's
#: support) for which the bounds use a dense factorization or eigenvalues.
BOUND_DENSE_MAX = 3000

#: Rows tried per PSD block for a trace bound ``<W, S> <= t`` with ``W``
#: positive definite (those covering most of the block first).
BOUND_TRACE_ROWS = 32


# --- cvxmetric/_linalg.py --------------------------------------------------

# Rows per chunk of the gathered (sample-space) loops.
_LINALG_CHUNK = 1 << 16
# Up to this many samples, x_i^T V x_j for all pairs comes from the n x n
# kernel X V X^T (one BLAS-3 product, 10x faster than gathering rows).
_KERNEL_MAX = 2500
# Difference vectors up to this many floats (512 KB) are always stored: at
# that size the two BLAS calls of the stored form beat the sample-space form
# (measured 1.4-2x on d = 20, 1857 pairs), whatever the ratio pairs / samples.
_SMALL_PHI = 1 << 16
# Relative cost of one element of a sparse product or of a row gather against
# one flop of a dense BLAS-3 product (measured on the 2-core machine); used to
# choose the cheaper way of forming a Gram matrix.
_SPARSE_COST = 8.0
_GATHER_COST = 4.0


# --- cvxmetric/_solver.py --------------------------------------------------

#: A phase whose BLAS calls each do at least this many floating-point
#: operations uses every thread BLAS has on an idle machine; below, or on a
#: loaded one, it runs on one thread.  Measured on the 2-core development
#: machine (OpenBLAS 0.3.31, 2 threads), best of repeated calls:
#:
#: ============================  =======  ===========  ===========
#: call                          flops    idle         loaded
#: ============================  =======  ===========  ===========
#: (2000 x 100) @ (100 x 34)     1.4e7    1.93x        0.75x
#: (200 x 200) @ (200 x 200)     1.6e7    1.44x        0.65x
#: (100 x 3446) @ (3446 x 100)   6.9e7    1.50x        0.43x
#: (174 x 1000) @ (1000 x 6000)  2.1e9    1.79x        1.10x
#: (1000 x 1000) @ (1000 x 1000) 2.0e9    1.91x        0.99x
#: eigh(100) / eigh(400)         --       0.98x/1.15x  0.49x/0.55x
#: ============================  =======  ===========  ===========
#:
#: (speed-up of two threads over one: time on one / time on two;
#: "loaded": one CPU-bound neighbour process.)  So a second thread pays
#: for products from about 1e7 flops when the machine is idle, and never
#: pays when it is loaded (small calls wait for a core at every call:
#: 2-7x slower); eigendecompositions gain nothing either way.
THREADED_FLOPS = 1e7

#: The machine counts as loaded when other processes keep at least this
#: many cores busy (sampled from ``/proc/stat`` over :data:`_LOAD_SAMPLE`
#: seconds, reused for :data:`_LOAD_REUSE` seconds).
BUSY_CORES = 0.5
_LOAD_SAMPLE = 0.05
_LOAD_REUSE = 2.0

#: A fast solver logs its progress line (iteration, objective where the
#: state has one, error, elapsed seconds) at its first iteration and then
#: at most once per this many seconds, and a final line; at INFO.
PROGRESS_EVERY = 1.0


# --- cvxmetric/cli.py ------------------------------------------------------

#: numpy's ``RandomState`` seeds are integers in [0, 2**32 - 1].
_SEED_MAX = 2 ** 32 - 1


# --- cvxmetric/collection.py -----------------------------------------------

#: Largest accepted ``max(0, -min_eig(M))``, relative to ``max(1, |f_ref|)``;
#: the same threshold as :attr:`cvxmetric.result.Certificate.tol_feas`.
PSD_TOL = 1e-7

#: Largest uncompressed size, in bytes, of an ``.npz`` file that is read
#: (the sum of its members, and each array's ``shape * itemsize``): a small
#: compressed file can otherwise expand to exhaust memory.  The environment
#: variable ``CVXMETRIC_MAX_NPZ_BYTES`` overrides it.
MAX_NPZ_BYTES = 1 << 30

#: Generated and stored float arrays that agree to this relative accuracy
#: are the same instance (last-bit differences between CPUs).
_REGENERATION_RTOL = 1e-12


# --- cvxmetric/constraintdml/_problem.py -----------------------------------

# relative tolerance deciding "on the margin" when making multipliers
# consistent with a primal point
_MARGIN_TOL = 1e-9
# largest lam of the normalised problem (see ConstraintData.normalized): the
# fast dual squares its multipliers, which grow like lam
_LAM_MAX = 1e100
# a cannot-link this many times shorter than the median one is named when
# the exact solve fails (ConstraintData._short_pairs_hint)
_SHORT = 1e3
# pairs shown in an error message
_SHOW = 10
# store the difference vectors (P, d) up to this many floats (16 MB)
_MATERIALIZE = 1 << 21

# the exact model's per-feature scales 2^e are kept within 2^+-_EXP_MAX, so
# that the weights 2^-(e_i + e_j) of its regulariser, squared by the conic
# form, stay far inside the floating-point range
_EXP_MAX = 64


# --- cvxmetric/constraintdml/fast.py ---------------------------------------

# Levenberg-Marquardt damping of the Newton system, relative to its diagonal
_MU = 1e-2
# an inner solve stops at this fraction of the last certified gap
_INNER_RTOL = 1e-2
# iterations (inner) or rounds (outer) without progress before giving up
_STALL = 5
# Newton steps between global certificates (with a polish) inside a round
_CHECK_EVERY = 10
# continuation on lam (in the normalised units of ConstraintData.normalized,
# where the median cannot-link has length ~1): a problem whose lam is below
# _CONT_BELOW is reached through lam = _CONT_START, _CONT_START / _CONT_FACTOR,
# ..., each stage warm-started from the last; stages stop at _CONT_FLOOR
# (below it A(u) = Pi_+(Y(u)) / lam loses its digits to round-off in Y)
_CONT_BELOW = 1e-3
_CONT_START = 1e-2
_CONT_FACTOR = 10.0
_CONT_FLOOR = 1e-12
# the first Newton steps of a stage keep the last stage's face (multipliers
# at a bound stay there): measured, Newton converges on it in 2-3 full steps
_STAGE_HOLD = 5
#: The face polish's ladder (:func:`_polish`): a constraint is on its margin
#: when its distance is within this of 1, and the range of ``A(u)`` is the
#: eigenvalues (entries, diagonal) above this fraction of the largest.
CONSTRAINTDML_FACE_LADDER = (1e-3, 1e-5, 1e-7)


# --- cvxmetric/constraints.py ----------------------------------------------

#: Most tuples a ``*_from_labels`` generator samples (2^28: the index
#: arrays alone take 4-8 GiB there, far beyond what any solver of the
#: package fits).  Larger counts are refused naming the argument instead
#: of failing on an allocation.
MAX_SAMPLED = 1 << 28


# --- cvxmetric/ldml/_collection.py -----------------------------------------

#: Iteration budget of the ``"lowrank"`` method, above ``fit_lowrank``'s
#: default of 5 000: a run that converges stops by itself (the most the
#: collection needs is about 3 200 iterations, on breast_cancer_frobenius),
#: and plain gradient descent with Barzilai-Borwein steps needed about
#: 8 000 on wine with the trace regulariser (gap 1.9e-6 after 5 000).
LOWRANK_MAXITER = 20_000


# --- cvxmetric/ldml/_mildml.py ---------------------------------------------

# Entries of one block of the selection's distances (32 MB).
_BLOCK_ENTRIES = 1 << 22

# Up to this many instance pairs per bag pair, the selection's minimum is a
# running minimum over strided views of the block (no copy); beyond, the
# block is transposed and reduced by argmin.
_RUNNING_MIN = 16

#: Rounds of :func:`_finish` (L-BFGS at a held selection, then re-selection).
FINISH_ROUNDS = 10


# --- cvxmetric/ldml/_polish.py ---------------------------------------------

#: Largest face polished: ``k (k + 1) / 2 + 1`` Newton unknowns (3 241 at
#: 80), a dense Hessian.
POLISH_RANK = 80


# --- cvxmetric/ldml/_scale.py ----------------------------------------------

#: ``lam="auto"`` is this fraction of ``lam_max`` (the smallest trace weight
#: at which ``M = 0`` is optimal; docs/ldml/formulation.md, "Default regularisation").
AUTO_RATIO = 0.01

# pairs per block when summing outer products over explicit pairs
_LDML_SCALE_CHUNK = 65_536


# --- cvxmetric/ldml/estimator.py -------------------------------------------

#: ``LDMLSupervised`` with ``solver="exact"`` gives CVXPY one exponential
#: cone per pair of samples: at most this many pairs.  Beyond, Clarabel is
#: unreliable -- on iris's 7 140 standardised pairs it fails outright on
#: some folds and stops 1e-6 short of the certificate on others (whatever
#: the scaling), and SCS takes minutes.  ``"fast"`` keeps a few arrays of
#: the pairs' length, up to :data:`~cvxmetric.ldml.fast.CERTIFY_PAIRS`
#: pairs, and is certified by the same duality gap.
PAIRS_MAX = 5_000


# --- cvxmetric/ldml/exact.py -----------------------------------------------

#: The level-set SDPs (the trace bound without a regulariser, the
#: certificate's sharpening) are solved up to this many pairs (one conic
#: constraint each: 15 000 pairs took minutes) ...
LEVEL_SDP_PAIRS = 5000

#: ... and up to this input dimension (also that of
#: :meth:`LDMLData.strict_direction`).
LEVEL_SDP_MAX = 100

#: The trace weight of the continuation attempt of :func:`solve_exact`
#: (whitened features, the objective per pair): a start for the polish.
CONTINUATION = 1e-3

#: The fallback solver's (SCS's) tolerance and iteration cap: the polish
#: finishes its point (at 1e-9 SCS ran for minutes on 2 000 pairs).
FALLBACK_TOL = 1e-6
FALLBACK_ITER = 20_000

#: Pairs in the SDP of :meth:`LDMLData.strict_direction` ...
DIRECTION_PAIRS = 1000

#: ... solved only in up to this many dimensions of the data's span (60
#: dimensions took 100 s, and 1 000 pairs did not bound them).
DIRECTION_RANK = 30


# --- cvxmetric/ldml/fast.py ------------------------------------------------

# Rows of one block of the all-pairs loops: each (block, N) array of a step
# is 61 MB at N = 15 000 (a handful are alive at once).
_LDML_BLOCK = 512

# Pairs of one block of PairSet._distances (a (block, d) difference
# array stays in cache).
_PAIR_BLOCK = 4096

# Entries (pairs x features) up to which the explicit pairs' difference
# vectors are stored on an array-API device (about 256 MB in float64);
# beyond, each block of pairs gathers its rows again.
_LDML_DEVICE_PHI = 1 << 25

#: The stationarity (relative gradient norm) at which :func:`solve_fast`
#: hands L-BFGS's point to Newton's method on its face (up to
#: ``LEVEL_SDP_PAIRS`` pairs).
NEWTON_FROM = 1e-2

#: The variance floor of the whitening of :func:`_whitened` with the trace
#: regulariser is ``RIDGE * lam / n_pairs``.
RIDGE = 4.0

#: The low-rank method certifies a full-rank run only up to this many
#: pairs (the certificate's distances, slopes and sparse Laplacian are a few
#: arrays of this length).  Beyond, the status stays ``optimal_inaccurate``
#: at a stationary point.
CERTIFY_PAIRS = 5_000_000


# --- cvxmetric/lmnn/_problem.py --------------------------------------------

#: Entries of the (anchors, samples, features) and (anchors, targets,
#: samples) arrays a blockwise pass over LMNN's triplets holds at once
#: (32 MiB of float64): the target search, the objective and the
#: certificate never hold one entry per triplet.
TRIPLET_BLOCK = 1 << 22

#: Hinge arguments within this of 0 (the margin is 1) are on the margin:
#: the certificate keeps a given multiplier there and reads the others off
#: the sign of the argument.
MARGIN_TOL = 1e-9


# --- cvxmetric/lmnn/exact.py -----------------------------------------------

#: Largest number of impostor triplets ``(i, j, l)`` the exact path
#: declares (one linear constraint and one slack each): iris (45 000) and
#: wine (62 574) at k = 3 fit.
EXACT_MAX_TRIPLETS = 100_000

#: The exact path solves in per-feature units (each feature divided by the
#: power of two nearest its spread) when the features' spreads span more
#: than this many powers of two (raw wine: 2^13); otherwise as given.
FEATURE_SCALE_SPREAD = 4


# --- cvxmetric/lmnn/fast.py, cvxmetric/lmnn/_sweeps.py ---------------------

#: Fibonacci hashing's multiplier (2^64 over the golden ratio, odd): the
#: screening's pseudo-random order of triplet ids, the same on NumPy (as
#: uint64) and on a device (as the int64 of the same bits).
LMNN_HASH = 0x9E3779B97F4A7C15
#: ``locate_tol`` of LMNN's restricted Qwise solves (``lmnn.fast``): the
#: 1e-2 measured before :data:`QWISE_LOCATE_TOL` existed.  With that default
#: instead, digits (k = 3, two BLAS threads) took 17.5 s against 8.9 s: the
#: first (cold) round ended at a slightly different point and the next
#: round's Qwise solve took 5 000 more iterations at its last tolerances;
#: k = 2 and 4, and k = 3 on one thread, within 15 %.
LMNN_LOCATE_TOL = 1e-2
#: ``omega0`` (the initial primal weight) of LMNN's restricted Qwise solves:
#: 1, the weight before the Qwise default became the largest hinge weight
#: of the scale-free twin.  With that default the letter-shaped benchmark
#: (1.15 * 10^9 triplets) took 73.6 / 75.1 s and 735 MB against 58.4 /
#: 51.9 s and 624-683 MB (interleaved runs, 2026-11-29, the other core
#: busy); digits k = 3 the same (8.4-9.0 against 8.8-9.2 s), k = 2 and 4
#: 6.3 s against 7.2 and 6.6 s (one BLAS thread).
LMNN_OMEGA0 = 1.0
#: ``hold_below`` of LMNN's restricted Qwise solves: ``None``, held hinges
#: from the first block even from a cold start (the first round), as before
#: :data:`QWISE_HOLD_BELOW`.  Gated at its 1e-2, breast_cancer (seed 2 of
#: the real-data suite, 290 700 triplets) took 29-31 s against 17.4 s.
LMNN_HOLD_BELOW = None


# --- cvxmetric/mmc/_problem.py ---------------------------------------------

#: Singular values of the Jacobi-scaled similar differences (unit columns)
#: at or below this fraction of the largest span their numerical null space:
#: components that small are round-off of data whose features are exactly
#: dependent.
NULL_RTOL = 1e-13
#: A dissimilar difference "sees" that null space when more than this
#: fraction of its squared (scaled) length lies there (components above
#: 1e-12 of its length: more than round-off).
SEEN_RTOL = 1e-24
#: Floor of ``u`` in the dual bound, relative to ``max(u)``.
U_FLOOR = 1e-12
#: The degenerate solution is accepted when its objective is below this
#: fraction of the Euclidean metric's scale-free value ``r(I)`` (round-off
#: allowance included).  100x tighter than the package's gap; 1e-10 refused
#: exactly degenerate data (398 distinct similar pairs in d = 400) whose
#: allowance alone was 1.01e-10 of ``r(I)``, the objective being 3e-15.
DEGENERATE_RTOL = 1e-8
#: A dual bound whose round-off allowance (relative) exceeds this is not
#: trusted: ``dual_bound`` then reports none (``-inf``).
BOUND_TRUST = 1e-3
#: Range of the features' difference scales ``s_k = sqrt(sum_S phi_k^2)``
#: MMC accepts: ``M`` scales like ``1 / s^2``, and its entries must stay
#: normal floating-point numbers in the user's units.
SCALE_RANGE = (1e-145, 1e145)


# --- cvxmetric/mmc/exact.py ------------------------------------------------

#: A full problem with more than this many coefficients in its dense
#: constraint block (``r (r + 1) / 2`` whitened entries times ``|D|``) is
#: first solved on the face of a fast solution (:func:`solve_exact`).
FACE_REDUCE_ABOVE = 100_000

#: Eigenvalues of the fast solution above this fraction of the largest one
#: span its face; the face is then widened by :data:`FACE_MARGIN` directions
#: (at least doubled).
FACE_RTOL = 1e-6
FACE_MARGIN = 8


# --- cvxmetric/model.py ----------------------------------------------------

#: A metric matrix whose asymmetry exceeds this fraction of its largest
#: entry is not a Mahalanobis matrix.
SYMMETRY_RTOL = 1e-8


# --- cvxmetric/omdml/_problem.py -------------------------------------------

_OMDML_BLOCK = 8192  # triplets per block of the certificate's passes

#: Largest squared difference length of a view accepted (see
#: :meth:`OMDMLData._check_triplets`).
MAX_SQ_DIST = 1e150

#: Singular values of a view's differences below this fraction of the
#: largest are the directions "outside the span" of :meth:`OMDMLData.view_bases`.
_SPAN_TOL = 1e-6


# --- cvxmetric/omdml/exact.py ----------------------------------------------

#: Views of scale ``2^k`` with ``k`` at least this are bounded through the
#: hinge-only dual (strictly feasible multipliers) in
#: :func:`interior_multipliers`; their regulariser's share of the optimum,
#: at most ``2^(-4k) ||N||^2 / 2``, is then below the certificate's tolerance.
_HARD_EXP = 8


# --- cvxmetric/omdml/fast.py -----------------------------------------------

#: A factor entry beyond this means online gradient descent diverged (its
#: starting rows are orthonormal: entries at most 1).
_DIVERGED = 1e8


# --- cvxmetric/qwise/_problem.py -------------------------------------------

#: A restricted problem (a working set) stores its difference vectors up to
#: this many floats (128 MB): its pairs are few next to the samples' rows,
#: and one stored product is cheaper than the sample-space form's gathers.
_RESTRICTED_PHI = 1 << 24

#: Range of a nonzero hinge weight in scale-free units (see :class:`Scaling`).
#: Above it the regulariser is below the round-off of the loss (a hard-margin
#: problem no solver here resolves); below it the weights are near the
#: floating-point underflow.
C_RANGE = (1e-250, 1e8)

#: The data scale s may lie within 2^(+-_MAX_EXP): squared distances then
#: stay within about 1e-304 .. 1e304.
_MAX_EXP = 505


# --- cvxmetric/qwise_vector/_problem.py ------------------------------------

#: Range of the smoothing ``h`` the paper allows (Appendix A.2: h in
#: [0.01, 0.5]); values outside are refused as the losses' shape degrades
#: (h -> 0: Newton's quadratic band vanishes; h > 0.5: L_0^h bends past the
#: margin of L_1^h).
H_RANGE = (1e-6, 0.5)

_QWISE_VECTOR_CHUNK = 65_536  # rows per block when features are built

#: Largest ``log2`` of the feature scale the solvers are handed.  The model
#: is not invariant to scaling ``X``: at ``|Psi| ~ 2^k`` the optimal ``w`` is
#: of order ``2^-k`` and its regulariser ``0.5 ||w||^2`` of order
#: ``2^-2k``.  Above ``2^64`` that term sits more than ``2^-128`` below the
#: losses -- far below the round-off of the objective -- so round-off, not
#: the data, decides ``w``, and a dual point must balance ``sum C beta y
#: Psi`` beyond float64's precision to certify it (measured on iris / wine:
#: Clarabel's certificate fails from ``|Psi| ~ 1e7`` on wine, Newton's from
#: ``~ 1e11``, with errors that say so; at ``1e301`` the twin's weight
#: overflowed).  Beyond it the data are refused up front, naming ``X``.
_MAX_SCALE_EXP = 64
#: Smallest ``log2`` of a feature's scale the scaled twin goes to: features
#: below ``2^-64`` make ``w``'s effect on the margins (of order
#: ``|Psi|^2``) vanish below round-off, and a twin scaled further up would
#: only make its regulariser weight ``sigma^-2`` overflow.
_MIN_SCALE_EXP = -64


# --- cvxmetric/qwise/fast.py -----------------------------------------------

#: Working-set rounds with a tolerance at least this (those that only
#: locate the set) run their pair products in float32.  Not 1e-4: at
#: (100, 10^6) a float32 round at 1e-4 crawled from 2e-3 to 1e-4 in 640
#: iterations, where float64 went from 1.5e-3 to 8e-7 in 256.
_SINGLE_TOL = 1e-3

#: The tolerance of Qwise's first working-set rounds, which only locate the
#: set (``QwiseDualSolver``; it tightens a hundredfold once the constraints
#: a round adds carry little loss).  Measured at (100, 10^5), generator
#: seeds 0-3, one BLAS thread, process time: 1e-2 took 3.6 / 26.6 / 18.1 /
#: 8.5 s, 1e-1 3.4 / 21.4 / 14.1 / 7.1 s, 3e-1 2.6 / 18.0 / 14.0 / 6.9 s;
#: at (100, 10^6) 26.1 / 20.9 / 23.4 s (3e-1 adds a fourth tightening
#: round).  1 makes the first round stop at the ray start, with nothing
#: added: 10.9 s at seed 0.
QWISE_LOCATE_TOL = 1e-1

#: Consecutive working-set rounds that keep their tolerance because the
#: constraints they add carry a hinge loss above it (at most; then the
#: tolerance tightens all the same, so that rounds which drop constraints
#: and meet them again cannot repeat without end).
QWISE_KEEP_TOL_ROUNDS = 4

#: The endgame's Gauss-Newton step on the whole face solves a dense
#: system of ``d r + |W|`` unknowns (``r`` the rank of ``M``, ``W`` the
#: margin set); above this size the reduced step below is taken instead.
_POLISH_MAX_UNKNOWNS = 1200
#: The reduced face step (``_newton_face_reduced``) solves a dense
#: symmetric KKT system of ``r (r + 1) / 2 + |W|`` unknowns, formed from
#: ``|W| (d - r) r`` products; above either bound the endgame is skipped
#: (the iterations alone still converge).  At the hard (100, 10^5) faces
#: (``r = 48``, ``|W| = 2 529``: 3 705 unknowns, 6.3e6 products) one step
#: takes about a second on the 2-core development machine and about
#: 250 MB (the system and the ``(|W|, |W|)`` Gram matrices).
QWISE_FACE_MAX_UNKNOWNS = 5000
QWISE_FACE_MAX_PRODUCTS = 3 * 10 ** 7
#: The reduced step is tried only below this certified gap: above it the
#: face read off the iterate was wrong at every attempt on the hard
#: (100, 10^5) seeds (gaps 4e-3 to 9e-3: candidates at 0.9-1.0, 0.5-1 s
#: each).
QWISE_FACE_REDUCED_FROM = 1e-3
#: ... and only where the iterations are slow: when the run's best gap
#: over its last four checks, continued at the same rate, would reach the
#: tolerance after more than this many further checks.  A reduced step
#: (about a second at |W| = 2 500) then replaces several hundred
#: iterations; where the iterations converge fast (the benchmark's seed 0,
#: which needs about five checks per hundredfold) it would cost more than
#: it saves.
QWISE_FACE_SLOW_CHECKS = 8

#: Hinges held at their upper bound in the PDHG iterations (``_Held``):
#: a multiplier at ``c`` whose hinge is violated by more than
#: ``QWISE_HOLD`` times ``max(1, max |delta|)`` is held; a held hinge
#: that comes within ``QWISE_RELEASE`` times that scale of its margin is
#: released (the working set's band and three bands: the same hysteresis).
QWISE_HOLD = 0.3
QWISE_RELEASE = 0.1
#: A run from the ray start (no ``init``) holds hinges only while its
#: certified gap is at most this.  There ``M`` moves too far within one
#: check: from the ray start of the scaling benchmark's (50, 10^4), 195 of
#: the 201 hinges held in the first block were satisfied at its check
#: (their stale distances off by 10^4), the restarts drove the primal
#: weight from 0.18 to 2e-4, and the run took 3 456 iterations and 8.2 s
#: against 704 and 2.0 s without holding; (25, 10^4) 2 112 against 768,
#: (100, 10^4) 2 752 against 1 152.
#: Gated here these runs are the ones without holding, and (100, 10^6)
#: keeps the hold's gain (2 112 iterations either way, 23 s against 32 s).
#: Warm starts (working-set rounds) hold from the start: ungated, a round
#: of 67 constraints of data scaled by 10^3 (its scale-free hinge weight
#: 2^24) ran 2 * 10^5 iterations at a gap of 0.6, where holding converges.
QWISE_HOLD_BELOW = 1e-2

#: The face polish's ladder (:func:`_polish`): a hinge is on its margin
#: when ``|delta_q - a_q(M)|`` is at most this fraction of
#: ``max(1, max |delta|)``, active above it; the looser band first.
QWISE_FACE_LADDER = (1e-3, 1e-5)


# --- cvxmetric/qwise_structural/exact.py -----------------------------------

#: Largest number of 1-slack constraints :func:`solve_structural_enumerated`
#: writes out.
MAX_ENUMERATED = 20_000


# --- cvxmetric/rankdml/_collection.py --------------------------------------

# a returned matrix whose trace misses tau by more than this (relative) is
# infeasible for a trace-fixed problem: its objective is reported as +inf
_TRACE_RTOL = 1e-7


# --- cvxmetric/rankdml/_pairs.py -------------------------------------------

# distances computed per block of queries: block * n_gallery floats at most
_BLOCK_FLOATS = 1 << 22


# --- cvxmetric/rankdml/_problem.py -----------------------------------------

# rows of the diagonal problems' K built per block
_K_BLOCK = 8192

# relative accuracy of the one-dimensional roots (trace multiplier)
_ROOT_RTOL = 1e-13

#: Largest difference-vector length accepted: the unit margin is compared
#: with squared distances, and the dual maps square sums of them (Burg's
#: ``z^2``, ``||S||^2``), so lengths beyond this would overflow.
MAX_DIFF_LENGTH = 1e60

#: Range of the fixed trace: its square enters the Laplacian's bound and
#: ``tau`` times squared distances the hinges.
TAU_RANGE = (1e-100, 1e100)


# --- cvxmetric/rankdml/fast.py ---------------------------------------------

# regularisation rho = h mu min(1, ||projected gradient||) of the Newton
# system, mu adapted per iteration (RankDualSolver.update)
_MU_START = 1e-2
_MU_MIN = 1e-10

#: Rows of K per block when forming K^T D K (bounds the extra memory).
_IP_CHUNK = 8192


# --- cvxmetric/slr/_collection.py ------------------------------------------

#: Iteration cap of the collection's Algorithm 1 runs (wine needs ~2000).
ADAPTIVE_MAXITER = 20_000


# --- cvxmetric/slr/_problem.py ---------------------------------------------

#: Largest number of symmetric coordinates ``p = r (r + 1) / 2`` for which
#: the generalised Hessian is formed densely (a (p, p) matrix and an
#: (n, p) feature matrix); above it every Hessian is applied matrix-free,
#: ``H[D] = 2 U^T (m o (U D U^T)) U`` over row blocks (``O(n^2 r)`` per
#: product, no array larger than ``n r`` besides one row block).
DENSE_MAX_SYM = 2080  # r <= 64

#: Entries ``n p`` of the dense feature matrix ``Q`` allowed (256 MB).
DENSE_MAX_FEATURES = 1 << 25

#: The dual bound assumes a minimiser within ``DUAL_RADIUS * max(1, ||Z||)``
#: of the point it is computed at (see :meth:`SLRData.dual_bound_cg`).
DUAL_RADIUS = 10.0

#: Entries of one row block (b x n) in a pass over the pairs.
SLR_DEFAULT_BLOCK = 1 << 20

# Up to this many terms change side on the certificate's ball, their
# features are subtracted from the Hessian instead of a masked pass.
_FEW_TERMS = 50_000
# Curvature below this (H has eigenvalues in [0, 2]) counts as singular.
_TINY_CURVATURE = 1e-12


# --- cvxmetric/slr/exact.py ------------------------------------------------

#: Largest ``n_terms * width`` (hinge terms times coefficients per term) the
#: exact path builds: about 2 GB in CVXPY's canonicalisation; n = 1 000 at
#: rank 20, n = 810 at rank 30.
EXACT_MAX_COEFFICIENTS = 10_000_000

#: The symmetric form with more coefficients than this (terms times rank)
#: is solved by the margin-set reduction (``reduce="auto"``).
REDUCE_ABOVE = 1_000_000

#: Terms whose hinge argument at the Newton solution is within
#: ``MARGIN_BAND (delta1 - delta2)`` of 0 keep their own hinge in the
#: reduced model.
MARGIN_BAND = 5e-2

#: At most this many near-margin terms keep their hinge in the first round:
#: the band narrows to the ``MARGIN_TERMS``-th smallest ``|a_ij|``.
MARGIN_TERMS = 5_000

#: Weight ``eps`` of the selection term ``(eps / 2) ||Z - Z_0||_F^2`` (``Z_0``
#: the Newton solution); Eq. 4's Hessian in ``Z`` lies between 0 and ``2 I``.
SELECT_WEIGHT = 1e-6


# --- cvxmetric/slr/fast.py -------------------------------------------------

#: Newton systems solved to a relative residual of at least this use
#: single-precision Hessian products (half the time of the dominant
#: ``O(n^2 r)`` passes; their relative error is about ``1e-6``); tighter
#: ones use float64.  The Newton iteration itself corrects the error of a
#: direction: every gradient and value is a float64 pass.
HESS32_RTOL = 1e-5

#: Largest number of ordered pairs ``n^2`` for which the interior-point
#: fallback runs (its iterates are about ten ``n x n`` arrays: 16 MB each).
IPM_MAX_PAIRS = 1 << 21


# --- cvxmetric/slr/randomized.py -------------------------------------------

#: Entries of one row block (b x n_cols) in a pass over pairs (32 MB float64).
SLR_RANDOMIZED_DEFAULT_BLOCK = 1 << 22

#: Above this many samples the certificate's exact Eq. 4 objective (a pass
#: over all n^2 pairs) is skipped; a row-sampled estimate is reported instead.
OBJECTIVE_MAX_N = 20_000

#: Rows sampled for the objective estimate when the exact pass is skipped.
ESTIMATE_ROWS = 1000


# --- cvxmetric/itml/_problem.py --------------------------------------------

#: How many times the certificate halves inexact multipliers towards 0
#: (where the dual is 0) before it gives up on a bound and states 0.
ITML_SHRINK_STEPS = 60


# --- cvxmetric/itml/exact.py -----------------------------------------------

#: Largest number of features ITML's exact path declares: ``log_det`` is a
#: PSD block of twice the features' size, dense in the interior-point
#: system (d = 30: 1 830 entries, about 1 s per Clarabel iteration on the
#: 2-core machine; d = 64: 8 256, beyond the real-data suite's 120 s).
ITML_EXACT_MAX_FEATURES = 32

#: Largest ``n_pairs * d (d + 1) / 2`` (the nonzeros of its pair rows, each
#: dense in ``M``) the exact path declares: measured at d = 30, 160 pairs
#: (75 000) solve in 9-40 s, 600 pairs (279 000) in 62 s and 4 000 pairs
#: (1.9 million) in 264 s on the loaded 2-core machine.
ITML_EXACT_MAX_ENTRIES = 200_000


# --- cvxmetric/itml/fast.py ------------------------------------------------

#: Sufficient-increase constant of the dual Newton method's projected
#: line search (Armijo).
ITML_ARMIJO = 1e-4

#: Conjugate-gradient iterations per Newton step at most.
ITML_CG_MAXITER = 200


# --- cvxmetric/gmml/exact.py -----------------------------------------------

#: Most features the exact path declares (``matrix_frac`` is a PSD cone of
#: order 2d; d = 30, breast_cancer: 15 to 20 s on the shared 2-core machine).
GMML_EXACT_MAX_FEATURES = 32


# --- cvxmetric/scml/_problem.py --------------------------------------------

#: Entries of ``C`` computed per block where ``C`` is not kept.
SCML_BLOCK_ENTRIES = 4_000_000


# --- cvxmetric/scml/exact.py -----------------------------------------------

#: Largest ``n_triplets * n_basis`` (entries of ``C``, each a nonzero of the
#: conic problem) the exact path declares: iris with SCML_Supervised's
#: defaults (4 500 triplets, 80 basis vectors: 360 000 entries, Clarabel
#: 63 iterations, 10 to 50 s on a loaded 2-core machine) fits; SCML's
#: default 'triplet_diffs' basis on iris (4 500 x 320) and wine's LDA basis
#: (5 340 x 260) are the fast path's.
SCML_EXACT_MAX_ENTRIES = 500_000


# --- cvxmetric/sdml/exact.py -----------------------------------------------

#: Most features the exact path declares: ``log_det`` of a d x d variable
#: is a PSD cone of order 2d and d exponential cones, and the interior-point
#: solvers' KKT systems grow like d^4 (d = 30, breast_cancer: 3 to 8 s on
#: the shared 2-core machine; d = 64, digits: over 3 minutes; d = 300: over
#: 100 GB).
SDML_EXACT_MAX_FEATURES = 32


# --- cvxmetric/sdml/fast.py ------------------------------------------------

#: scikit-learn's duality-gap and lasso tolerances for the descent: far
#: below the certificate's, so that its point passes at the package's
#: tolerance (measured: relative gaps below 1e-10 on the collection).
SDML_GLASSO_TOL = 1e-10

#: Sweeps of the descent at most.
SDML_GLASSO_MAX_ITER = 500

#: SDML's ``balance_param="auto"`` (the estimators' default): the weight
#: ``eta`` of the pairs' term is this fraction of the largest weight that
#: keeps ``P = prior^-1 + eta K`` positive definite -- so ``P`` is at least
#: ``(1 - fraction)`` times ``prior^-1`` in every direction and the problem
#: has a minimum whatever the data's scale -- ...
SDML_AUTO_FRACTION = 0.5

#: ... and never above metric-learn's default weight, which it keeps where
#: the pairs' term cannot make ``P`` indefinite.
SDML_AUTO_CAP = 0.5

#: Largest factor (entries) the constraint-based baseline's
#: ``DualView.hess_matrix`` may form for an exact Newton direction (32 MB of
#: float64).
CONSTRAINTDML_DIRECT_ENTRIES = 4_000_000
#: The exact Newton direction is formed when its flops (the factor's Gram
#: product and the Cholesky factorization) are below those of this many
#: conjugate-gradient iterations (near a degenerate optimum they run to
#: ``cg_maxiter = 200``).
CONSTRAINTDML_DIRECT_CG_STEPS = 100
#: A bounded least-squares solve of the baseline's polish
#: (``constraintdml.fast._bounded_lstsq``) runs at most this many flops' worth of BVLS iterations (one ``|E|^3``
#: least-squares solve each; at least 5, and all when they fit).  Lowered
#: from 2e10: at ``d = 25`` (faces of about 200 constraints) the run took
#: the same Newton steps to the same certificate in a third of the time.
#: Lowered again from 2e8 once the polish ran only near the optimum (5
#: iterations on faces above 200 constraints): the same Newton steps and
#: certified objectives on the bench's d = 10 to 100 at 4 000 and 16 000
#: pairs (seeds 0 and 1), d = 25 in 0.26 instead of 0.37 s.
CONSTRAINTDML_BVLS_FLOPS = 2e7
#: The baseline's arc search (``constraintdml.fast``) stops at a point with
#: an Armijo decrease whose slope along the projected arc is at most this
#: fraction of the slope at 0 (the curvature condition of the strong Wolfe
#: conditions): measured on the bench's d = 10 to 200 at 4 000 and 16 000
#: pairs, 3-5 times fewer arc points than bisecting the bracket to 1e-3 of
#: its length, the Newton steps within a few of the bisection's.
CONSTRAINTDML_ARC_SLOPE = 0.1
#: The baseline's polish (``constraintdml.fast._polish``) runs only on a
#: point whose own certified relative gap (its repaired primal map against
#: its dual value) is at most this: further from the optimum the face read
#: off ``A(u)`` is not the optimal one.  Measured on the bench's instances:
#: the polishes above 0.1 took 8.7 of 36 s at 16 000 pairs in d = 50
#: (generator seed 1) and none of them brought a stage's gap below 0.35.
CONSTRAINTDML_POLISH_BELOW = 0.1
#: After a polish that does not certify, the baseline polishes again only a
#: point whose own gap is at most this times the failed one's (until a round
#: stalls).  At low ``d`` the optimum leaves hundreds of must-links on or
#: near their margin and the face read off ``A(u)`` is rarely the optimal
#: one: on the bench's 4 000 pairs, seed 0, 4 of 6 polishes at ``d = 25``
#: and 10 of 11 at ``d = 10`` did not certify (each costs a pass over all
#: pairs and a bounded least-squares solve), while at ``d = 50`` the
#: polish that certified ran at a gap 700 (seed 0) and 3 700 (seed 1)
#: times below the failed one.
CONSTRAINTDML_POLISH_BACKOFF = 1e-2
#: Largest factor on the baseline's Levenberg-Marquardt damping of a Newton
#: step (``constraintdml.fast._Damping``): the damping is then at most
#: ``_MU`` times this, 1, a Jacobi-scaled gradient step in the Hessian's
#: null directions.  Measured: 10 took about as many Newton steps as 100 on
#: the bench's 4 000 pairs; 1 000 took 20.7 s against 100's 15.5 s at
#: 16 000 pairs in d = 50 (generator seed 1).
CONSTRAINTDML_DAMPING_MAX = 100.0

#: Qwise on an array-API device (:mod:`cvxmetric.qwise._xp`): entries
#: (rows x d) per row block of a pass -- large, few kernel launches -- and
#: the largest difference-vector matrix (bytes) stored on the device; above,
#: each pass gathers the rows of ``X`` block by block.
QWISE_DEVICE_BLOCK = 1 << 24
QWISE_DEVICE_PHI = 1 << 31
#: Largest chunk (bytes) of the pairs' difference vectors a Dask task of
#: Qwise's passes holds: a task's share of a pass.
QWISE_DASK_CHUNK = 1 << 27
