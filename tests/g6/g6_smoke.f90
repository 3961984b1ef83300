! The Fortran ABI of libsapporo (issue #18): a Fortran program calls the g6 routines as phiGRAPE
! does (INTEGER and DOUBLE PRECISION by reference, arrays (3, n)) and checks the forces, the
! potential, the nearest neighbours and a neighbour list against its own direct sum in double.
! Linked once against forcekit's libsapporo and once against the comparison library. Exit 0 on
! success, 1 (STOP 1) on any disagreement or error return.
program g6_smoke
  implicit none
  integer, parameter :: n = 50
  integer :: g6_npipes, g6calc_lasthalf2, g6_get_neighbour_list, g6_read_neighbour_list
  integer :: g6_open, g6_close, g6_set_ti, g6_set_j_particle
  integer :: clusterid, npipes, i, j, k, ni, nj, err, nnb, maxlen, pipe, expected
  integer :: idx(n), nn(n), list(n)
  double precision :: x(3, n), v(3, n), m(n), a(3, n), jk(3, n), pot(n), h2(n)
  double precision :: k18(3), j6(3), a2(3), ti, tj, dtj, eps2, r2, best, dx(3), dv(3)
  double precision :: ra(3), rj(3), rp, rinv, rv, worst
  integer :: bestid

  clusterid = 0
  err = g6_open(clusterid)
  if (err /= 0) stop 1
  npipes = g6_npipes()
  if (npipes < n) then
     print *, 'npipes', npipes, 'is below', n
     stop 1
  end if
  k18 = 0; j6 = 0; a2 = 0; tj = 0; dtj = 0
  do i = 1, n
     idx(i) = 100 + i
     m(i) = 1.0d0 / n
     x(1, i) = cos(1.3d0 * i); x(2, i) = sin(0.7d0 * i); x(3, i) = cos(2.9d0 * i + 1)
     v(1, i) = 0.1d0 * sin(i * 1.0d0); v(2, i) = 0.1d0 * cos(i * 3.0d0); v(3, i) = 0.0d0
     err = g6_set_j_particle(clusterid, i - 1, idx(i), tj, dtj, m(i), k18, j6, a2, v(:, i), x(:, i))
     if (err /= 0) stop 1
  end do
  ti = 0
  err = g6_set_ti(clusterid, ti)
  eps2 = 1.0d-4
  h2 = 0.25d0
  ni = n
  nj = n
  call g6calc_firsthalf(clusterid, nj, ni, idx, x, v, a, jk, pot, eps2, h2)
  err = g6calc_lasthalf2(clusterid, nj, ni, idx, x, v, eps2, h2, a, jk, pot, nn)
  if (err /= 0) then
     print *, 'g6calc_lasthalf2 returned', err
     stop 1
  end if
  worst = 0
  do i = 1, n
     ra = 0; rj = 0; rp = 0; best = huge(1.0d0); bestid = -1
     do j = 1, n
        if (j == i) cycle
        dx = x(:, j) - x(:, i)
        dv = v(:, j) - v(:, i)
        r2 = sum(dx * dx)
        rinv = 1.0d0 / sqrt(r2 + eps2)
        rv = sum(dx * dv) * rinv * rinv
        ra = ra + m(j) * rinv**3 * dx
        rj = rj + m(j) * rinv**3 * (dv - 3 * rv * dx)
        rp = rp - m(j) * rinv
        if (r2 < best) then
           best = r2
           bestid = idx(j)
        end if
     end do
     worst = max(worst, maxval(abs(a(:, i) - ra)) / sqrt(sum(ra * ra)))
     worst = max(worst, abs(pot(i) - rp) / abs(rp))
     if (nn(i) /= bestid) then
        print *, 'particle', i, 'nearest', nn(i), 'expected', bestid
        stop 1
     end if
  end do
  print *, 'worst relative error', worst
  if (worst > 1.0d-10) stop 1
  ! The neighbour list of pipe 0 (particle 1): sorted IDs within sqrt(h2).
  if (g6_read_neighbour_list(clusterid) /= 0) stop 1
  pipe = 0
  maxlen = n
  err = g6_get_neighbour_list(clusterid, pipe, maxlen, nnb, list)
  if (err /= 0) stop 1
  expected = 0
  do j = 2, n
     if (sum((x(:, j) - x(:, 1))**2) <= h2(1)) expected = expected + 1
  end do
  if (nnb /= expected) then
     print *, 'neighbours', nnb, 'expected', expected
     stop 1
  end if
  do k = 2, nnb
     if (list(k - 1) >= list(k)) stop 1
  end do
  err = g6_close(clusterid)
  if (err /= 0) stop 1
  print *, 'g6 Fortran smoke test passed'
end program g6_smoke
