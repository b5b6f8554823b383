// pdeagent deal.II null program: loads the library as a solver does (the common library,
// a Triangulation), writes zero grids of the case's output arrays and meta.json, solves
// nothing. Its median time under the submission protocol is the track's t_null.
#include "common.h"

#include <deal.II/grid/grid_generator.h>

using json = nlohmann::json;

template <int dim>
int run(const json &spec, const std::string &outdir)
{
  const auto start = std::chrono::steady_clock::now();
  dealii::Triangulation<dim> tria;
  dealii::GridGenerator::hyper_cube(tria);
  const json &grid = spec["eval_grid"];
  std::size_t n = grid["nx"].get<std::size_t>() * grid["ny"].get<std::size_t>();
  if (grid.contains("nz") && !grid["nz"].is_null())
    n *= grid["nz"].get<std::size_t>();
  const std::vector<double> zeros(n, 0.0);
  const auto names = pdeagent::output_arrays(spec["output"]); // (+ a flow case's pressure)
  if (names.size() == 1)
    pdeagent::write_grid(outdir + "/solution_grid.bin", zeros);
  else
    for (const auto &name : names)
      pdeagent::write_grid(outdir + "/solution_grid_" + name + ".bin", zeros);
  pdeagent::write_meta(outdir, start, json{{"null_program", true}, {"cells", tria.n_active_cells()}});
  return 0;
}

int main(int argc, char **argv)
{
  return pdeagent::main_program("null", argc, argv, run<2>, run<3>);
}
