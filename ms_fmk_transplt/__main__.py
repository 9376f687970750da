from ms_fmk_transplt.launch import entry

if __name__ == "__main__":
    entry()
