// A C++ user of the installed package: find_package(unif), link unif::framework, tokenize and load a checkpoint.
#include <iostream>
#include <unif/unif.h>
int main(int argc, char** argv) {
  auto vocab =
      std::make_shared<const unif::framework::Vocab>(unif::framework::Vocab::load(std::string(argv[1]) + "/vocab.txt"));
  unif::framework::BertTokenizer tok(vocab, true);
  for (auto& t : tok.tokenize("今天天气很好")) std::cout << t << " ";
  auto m = unif::framework::load_pretrained(argv[1]);
  std::cout << "\nparams: " << m.model->parameters().size() << "\n";
}
