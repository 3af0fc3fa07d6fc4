# Runs one search in one process and under mpirun on NP ranks and fails unless
# the two print the same bytes (docs/search.md, "Distributed over MPI").
#   cmake -DBIN=shardscope -DMPIEXEC=mpirun -DNP=2 -DCONFIG=file -DEXPERIMENT=name
#         -DOUT=dir -P search_mpi_compare.cmake
file(MAKE_DIRECTORY ${OUT})
execute_process(COMMAND ${BIN} search --config ${CONFIG} --experiment ${EXPERIMENT}
                        --csv ${OUT}/one.csv
                OUTPUT_FILE ${OUT}/one.txt RESULT_VARIABLE rc1)
execute_process(COMMAND ${MPIEXEC} --oversubscribe -np ${NP} ${BIN} search --config ${CONFIG}
                        --experiment ${EXPERIMENT} --csv ${OUT}/many.csv
                OUTPUT_FILE ${OUT}/many.txt RESULT_VARIABLE rc2)
if(NOT rc1 EQUAL 0 OR NOT rc2 EQUAL 0)
  message(FATAL_ERROR "search failed: one process ${rc1}, ${NP} ranks ${rc2}")
endif()
file(READ ${OUT}/one.txt one)
file(READ ${OUT}/many.txt many)
if(one STREQUAL "" OR NOT one STREQUAL many)
  message(FATAL_ERROR "${NP} ranks printed:\n${many}\none process printed:\n${one}")
endif()
file(READ ${OUT}/one.csv one_csv)
file(READ ${OUT}/many.csv many_csv)
if(NOT one_csv STREQUAL many_csv)
  message(FATAL_ERROR "the CSV of ${NP} ranks differs from one process's")
endif()
message(STATUS "${NP} ranks print the same ${EXPERIMENT} search as one process")
