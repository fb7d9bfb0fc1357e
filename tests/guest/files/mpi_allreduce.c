/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * svm-mpi-allreduce: the MPI program of the headline job. Every rank
 * contributes its rank id to an MPI_Allreduce(MPI_SUM) and checks the sum
 * against size * (size - 1) / 2. Rank 0 also names the MPI library. Exits 0
 * only if this rank's sum is right.
 *
 *   svm-mpi-allreduce abort   instead, the last rank calls MPI_Abort(3)
 *                             while the others wait in MPI_Barrier: the
 *                             whole step must end, not hang
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	char host[MPI_MAX_PROCESSOR_NAME], lib[MPI_MAX_LIBRARY_VERSION_STRING];
	int rank, size, sum = -1, want, len;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Get_processor_name(host, &len);
	if (rank == 0) {
		MPI_Get_library_version(lib, &len);
		/* The first line of MPICH's text is its version. */
		lib[strcspn(lib, "\n")] = '\0';
		printf("mpi: %s\n", lib);
	}
	if (argc > 1 && strcmp(argv[1], "abort") == 0) {
		if (rank == size - 1) {
			printf("mpi: rank %d of %d: MPI_Abort(3)\n", rank,
			       size);
			fflush(stdout);
			MPI_Abort(MPI_COMM_WORLD, 3);
		}
		MPI_Barrier(MPI_COMM_WORLD);
		printf("mpi: rank %d of %d: passed a barrier a rank never reached\n",
		       rank, size);
		MPI_Finalize();
		return 1;
	}
	MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	want = size * (size - 1) / 2;
	printf("mpi: rank %d of %d on %s: allreduce sum of ranks %d, expected %d: %s\n",
	       rank, size, host, sum, want, sum == want ? "ok" : "WRONG");
	fflush(stdout);
	MPI_Finalize();
	return sum == want ? 0 : 1;
}
