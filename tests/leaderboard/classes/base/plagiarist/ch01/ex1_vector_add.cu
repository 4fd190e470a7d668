// Hostile submission "plagiarist", exercise 1: no code of its own, only an #include of the
// file of another student ("fast", whose id is fast-0afde566), by the relative path from the
// build tree (work folder/slots/<slot>/src/chapters/ch01_indexing/) to where an older
// leaderboard kept every submission's files (work folder/entries/<id>/ch01/submission/).
// Expected: no other student's file is reachable from a build, so it does not build.
#include "../../../../../entries/fast-0afde566/ch01/submission/ex1_vector_add.cu"
