/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * svm-mpi-allreduce: the MPI program of the headline job. Every rank
 * contributes its rank id to an MPI_Allreduce(MPI_SUM) and checks the sum
 * against size * (size - 1) / 2. Rank 0 also names the MPI library. Exits 0
 * only if this rank's sum is right.
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
	MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	want = size * (size - 1) / 2;
	printf("mpi: rank %d of %d on %s: allreduce sum of ranks %d, expected %d: %s\n",
	       rank, size, host, sum, want, sum == want ? "ok" : "WRONG");
	fflush(stdout);
	MPI_Finalize();
	return sum == want ? 0 : 1;
}
